# SPDX-License-Identifier: GPL-2.0
"""Where this machine's apt fetches Debian from: the URIs of Debian's main
archive and of its security archive, read from the host's apt sources.

    main_uri()          # e.g. http://mirror.example/debian (no trailing /)
    security_uri()      # e.g. http://mirror.example/debian-security

The tests configure apt for suites the host does not use (kernels.py's and
sweep.py's apts under $CGE_CACHE/apt-<suite>/, the sid chroot, the server
image); they take the archive from the host's own sources rather than a
URI written in the repository, so that a machine with a local mirror or a
proxy fetches every suite from where it already fetches its packages.

apt itself is asked (`apt-get indextargets --no-release-info`), not its
files parsed here: apt alone applies all of its rules (sources.list and
sources.list.d/, one-line and deb822 formats, [options], Enabled: no,
which file names it reads, Dir::Etc set in apt.conf, entries for other
architectures), and indextargets is made for tools (a --format of chosen
fields), needs no root, no network and no apt-get update.  `apt-config
dump` shows the configuration but not the sources.

The main archive is the URI of the first deb entry (in apt's order) for the
host's release, the codename of /etc/os-release, else for its -updates, else
for its -backports; the security archive is that of the first deb entry for
<codename>-security.  A suite named by its alias (stable) does not count:
third-party archives use such names too; nor does a CD-ROM, which holds one
suite.  None found is an ArchiveError naming the files apt read.
tests/deps.sh applies the same rule in sh (python3 may not be installed yet
when it runs).  CGE_ARCHIVE and CGE_SECURITY_ARCHIVE, if set,
are taken instead (server.py's CGE_SERVER_MIRROR and sid.py's CGE_SID_MIRROR
come before them there).

CLI: archive.py [--main | --security] [--etc DIR] [--codename NAME]
     (prints the URI; exit status 1 and the reason on stderr if none)
"""
import argparse
import functools
import os
import subprocess
import sys
from pathlib import Path

ENV_MAIN = 'CGE_ARCHIVE'
ENV_SECURITY = 'CGE_SECURITY_ARCHIVE'
OS_RELEASE = (Path('/etc/os-release'), Path('/usr/lib/os-release'))
# one line per index target: deb or deb-src, the suite, the URI
FORMAT = '$(TARGET_OF) $(RELEASE) $(REPO_URI)'


class ArchiveError(Exception):
    pass


def codename(paths=OS_RELEASE):
    """VERSION_CODENAME of the first os-release file that exists, or None."""
    for p in paths:
        if p.exists():
            for line in p.read_text().splitlines():
                key, _, value = line.partition('=')
                if key.strip() == 'VERSION_CODENAME':
                    return value.strip().strip('"\'') or None
            return None
    return None


def _apt_opts(etc):
    """apt options that read the sources of etc (a directory holding
    sources.list and sources.list.d/) instead of the configured ones."""
    if etc is None:
        return []
    return ['-o', f'Dir::Etc::SourceList={Path(etc) / "sources.list"}',
            '-o', f'Dir::Etc::SourceParts={Path(etc) / "sources.list.d"}']


def source_files(etc=None):
    """The files apt reads its sources from (for error messages)."""
    if etc is None:
        r = subprocess.run(['apt-config', 'shell', 'L',
                            'Dir::Etc::SourceList/f', 'P',
                            'Dir::Etc::SourceParts/d'],
                           capture_output=True, text=True)
        conf = dict(line.split('=', 1) for line in r.stdout.split()
                    if '=' in line)
        main = Path(conf.get('L', "'/etc/apt/sources.list'").strip("'"))
        parts = Path(conf.get('P', "'/etc/apt/sources.list.d'").strip("'"))
    else:
        main, parts = Path(etc) / 'sources.list', Path(etc) / 'sources.list.d'
    files = [main] if main.exists() else []
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir()
                        if p.suffix in ('.list', '.sources'))
    return files


def entries(etc=None):
    """[(type, suite, URI without its trailing /)] of apt's sources, in
    apt's order, once each; ArchiveError if apt fails."""
    cmd = ['apt-get', 'indextargets', '--no-release-info', '--format',
           FORMAT, *_apt_opts(etc)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise ArchiveError('apt-get not found: no apt sources to take '
                           f"Debian's archive from (set {ENV_MAIN})") from None
    if r.returncode != 0:
        # apt says each error twice
        err = '\n'.join(dict.fromkeys(r.stderr.strip().splitlines()))
        raise ArchiveError(f'apt-get indextargets failed ({r.returncode}):\n'
                           f'{err}')
    out = []
    for line in r.stdout.splitlines():
        kind, suite, uri = (line.split(' ', 2) + [''] * 3)[:3]
        e = (kind, suite, uri.rstrip('/'))
        if uri and e not in out:
            out.append(e)
    return out


def _first(found, suites):
    """The URI of the first deb entry for the first of suites that has one;
    a CD-ROM serves no other suite, so it does not count."""
    for s in suites:
        for kind, suite, uri in found:
            if kind == 'deb' and suite == s and not uri.startswith('cdrom:'):
                return uri
    return None


@functools.cache
def find(etc=None, release=None):
    """(main archive URI, security archive URI or None) of apt's sources
    (etc: the directory of other sources, see _apt_opts) for release (the
    host's codename); ArchiveError if no main archive is found."""
    if not release:
        raise ArchiveError('no VERSION_CODENAME in '
                           f'{" or ".join(map(str, OS_RELEASE))}: the '
                           "release whose archive apt's sources name is "
                           f'unknown (set {ENV_MAIN})')
    found = entries(etc)
    main = _first(found, [release, f'{release}-updates',
                          f'{release}-backports'])
    if main is None:
        raise _none_found(f'archive for {release} (nor {release}-updates, '
                          f'{release}-backports)', ENV_MAIN, etc)
    return main, _first(found, [f'{release}-security'])


def _none_found(what, env, etc):
    return ArchiveError(
        f"no deb source of Debian's {what} in apt's sources ("
        + (', '.join(map(str, source_files(etc))) or 'no files')
        + f'); add one, or set {env} to its URI')


def main_uri(etc=None, release=None):
    """The URI of Debian's main archive: CGE_ARCHIVE, else apt's sources."""
    return os.environ.get(ENV_MAIN) or find(etc, release or codename())[0]


def security_uri(etc=None, release=None):
    """The URI of Debian's security archive: CGE_SECURITY_ARCHIVE, else
    apt's sources; ArchiveError if they name none."""
    uri = os.environ.get(ENV_SECURITY)
    if uri:
        return uri
    release = release or codename()
    uri = find(etc, release)[1]
    if uri is None:
        raise _none_found(f'security archive for {release}-security',
                          ENV_SECURITY, etc)
    return uri


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument('--main', action='store_true',
                       help="Debian's main archive (the default)")
    which.add_argument('--security', action='store_true',
                       help="Debian's security archive")
    ap.add_argument('--etc', type=Path,
                    help='read DIR/sources.list and DIR/sources.list.d/ '
                    "instead of apt's configured sources")
    ap.add_argument('--codename', help='the release (default: the host\'s)')
    args = ap.parse_args(argv)
    try:
        uri = (security_uri if args.security else main_uri)(args.etc,
                                                            args.codename)
    except ArchiveError as e:
        print(f'archive: {e}', file=sys.stderr)
        return 1
    print(uri)
    return 0


if __name__ == '__main__':
    sys.exit(main())
