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

__all__ = ["SIGN", "Release"]

#: the certificate's signer (:func:`dpalg.release._certificate.sign_certificate`), one floor up
SIGN: Provided[Callable[[Mapping[str, JSON], bytes], dict[str, JSON]]] = Provided("the certificate signer", "dpalg.release")


@final
@attrs.frozen
class Release:
    """Released values with the certificate that justifies them.

    Attributes:
        value: the plan's output: a number, an array, :data:`BOTTOM`, a tuple
            (for :class:`~dpalg.Compose`) or a dict (for :class:`~dpalg.Parallel`).
        certificate: JSON-ready dict; ``dpalg audit`` re-derives its claim.
    """

    value: object
    certificate: dict[str, JSON] = attrs.field(repr=False)

    @property
    def secure(self) -> bool:
        """Whether the noise came from a cryptographically secure source (the certificate's claim)."""
        randomness = self.certificate.get("randomness")
        return isinstance(randomness, dict) and randomness.get("secure") is True

    def __repr__(self) -> str:
        flag = "" if self.secure else ", NOT SECURE: seeded randomness, not differentially private"
        return f"Release(value={self.value!r}{flag})"

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
        return Release(self.value, SIGN.impl(self.certificate, private_key))
