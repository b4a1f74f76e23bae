"""AsyncSSH, imported without the warnings it raises about its own code.

AsyncSSH still names DSA's key types, which `cryptography` deprecates (46 and later): ten
`CryptographyDeprecationWarning` lines at its import, about AsyncSSH's code, of no use to a
user of the lab. Only that category, and only from AsyncSSH's modules, is filtered; the lab
imports AsyncSSH from here and nowhere else (only for the hosts backend and the rig).
"""

from __future__ import annotations

import warnings

from cryptography.utils import CryptographyDeprecationWarning

warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh(\.|$)")

import asyncssh  # noqa: E402

__all__ = ["asyncssh"]
