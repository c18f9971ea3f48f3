# SPDX-License-Identifier: GPL-2.0
"""A test's outside dependencies: skipped when one is missing, failed in
make check (tests/check.sh sets CGE_CHECK=1), where tests/deps.sh has
installed every one and a missing one means the check did not run."""
import os
import shutil

import pytest


def in_check():
    return os.environ.get('CGE_CHECK') == '1'


def missing(what):
    """Skip the calling test for @what, or fail it in make check."""
    if in_check():
        pytest.fail(f'{what}: make check needs it (tests/deps.sh installs '
                    'it)', pytrace=False)
    pytest.skip(what)


def need(cmd, package):
    """The path of @cmd, or missing() naming the Debian @package."""
    exe = shutil.which(cmd)
    if not exe:
        missing(f'{cmd} missing (apt-get install {package})')
    return exe
