# SPDX-License-Identifier: GPL-2.0
"""VM test harness: Debian kernels under QEMU with the host root over 9p."""
