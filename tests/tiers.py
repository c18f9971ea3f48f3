# SPDX-License-Identifier: GPL-2.0
"""The test tier being run (docs/testing.md): 'gate' (make check: checks
whose outcome a correct module decides, whatever the host's load) or 'full'
(make check-full: every test, the timing-bound ones too). CGE_TIER selects
it; a run of pytest without it is the full tier."""
import os

TIERS = ('gate', 'full')


class TierError(ValueError):
    pass


def tier():
    t = os.environ.get('CGE_TIER') or 'full'
    if t not in TIERS:
        raise TierError(f'CGE_TIER={t}: one of {", ".join(TIERS)}')
    return t


def gate():
    return tier() == 'gate'


def guest_env():
    """The environment prefix of a guest script's command: in the gate, the
    script leaves out the scenarios only deep tests read
    (tests/vm/guest/common.py scenarios())."""
    return 'CGE_TIER=gate ' if gate() else ''
