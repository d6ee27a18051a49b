"""What a run returns: the :class:`Release` (values and the certificate that justifies them).

A value class on the graph floor, so that ``plan.run`` and ``Session.run`` (the
node classes and sessions) can name their result without importing the runner
above them. The runner (:mod:`dpalg.release._release`) builds releases; signing
one (:meth:`Release.signed`) is the certificate's business, one floor up, and
reaches it through the :data:`SIGN` slot that :mod:`dpalg.release` fills when it
is imported (docs/architecture.md, "Slots").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import final

import attrs

from dpalg.graph._derivation import JSON
from dpalg.graph._provided import Provided

__all__ = ["SIGN", "VALUE_ROWS", "Release"]

#: the certificate's signer (:func:`dpalg.release._certificate.sign_certificate`), one floor up
SIGN: Provided[Callable[[Mapping[str, JSON], bytes], dict[str, JSON]]] = Provided("the certificate signer", "dpalg.release")
#: the released values with their error bars (:func:`dpalg.graph._readable.value_rows`), above the node classes
VALUE_ROWS: Provided[Callable[[object, object], list[tuple[str, str, str]]]] = Provided("the value formatter", "dpalg.graph._readable")


@final
@attrs.frozen
class Release:
    """Released values with the certificate that justifies them.

    Attributes:
        value: the plan's output: a number, an array, :data:`BOTTOM`, a tuple
            (for :class:`~dpalg.Compose`) or a dict (for :class:`~dpalg.Parallel`).
        certificate: JSON-ready dict; ``dpalg audit`` re-derives its claim.
        plan: the plan that ran (``None`` when unknown); ``str(release)`` reads
            each value's (1 − α) error bar from it.

    ``str(release)`` is a short table (path, value ± error, confidence; the
    error bars are the plan's own :meth:`~dpalg.AbstractMeasurement.accuracy`,
    rounded as in :mod:`dpalg.graph._readable`); ``repr(release)`` reads like
    its construction.
    """

    value: object
    certificate: dict[str, JSON] = attrs.field(repr=False)
    plan: object = attrs.field(default=None, repr=False, eq=False)

    @property
    def secure(self) -> bool:
        """Whether the noise came from a cryptographically secure source (the certificate's claim)."""
        randomness = self.certificate.get("randomness")
        return isinstance(randomness, dict) and randomness.get("secure") is True

    def __repr__(self) -> str:
        flag = "" if self.secure else ", NOT SECURE: seeded randomness, not differentially private"
        return f"Release(value={self.value!r}{flag})"

    def __str__(self) -> str:
        rows = VALUE_ROWS.impl(self.plan, self.value)  # (path, value ± error, confidence)
        table = [("path", "value ± error", "confidence"), *rows]
        widths = [max(len(row[i]) for row in table) for i in range(2)]
        lines = [f"{p:<{widths[0]}}  {t:<{widths[1]}}  {c}".rstrip() for p, t, c in table]
        if not self.secure:
            lines.append("NOT SECURE: seeded randomness, not differentially private")
        return "\n".join(lines)

    def certificate_json(self) -> str:
        """The certificate as a JSON string (schema: ``docs/certificates.md``)."""
        return json.dumps(self.certificate, indent=2, sort_keys=True, ensure_ascii=False)

    def signed(self, private_key: bytes) -> Release:
        """This release with an Ed25519 signature added to its certificate.

        Args:
            private_key: the 32-byte raw Ed25519 private key (see
                :func:`dpalg.release.generate_signing_key`).

        Raises:
            Unsupported: when the optional ``cryptography`` package is missing
                (install ``dpalg[sign]``).
        """
        return Release(self.value, SIGN.impl(self.certificate, private_key), self.plan)
