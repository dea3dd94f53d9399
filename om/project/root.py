"""A folder's project root: the nearest ancestor holding `.git`, else the folder itself.

Invariant: no file is read and no program run, only one lstat per ancestor
(om.project.identity asks git afterwards, once per root); import-light, for the
hook path.
"""

from om.fastpath import dirname, join, lexists, realpath


def project_root(directory):
    """The nearest ancestor of `directory` (itself included) holding `.git`, else `directory`; resolved."""
    path = realpath(directory)
    probe = path
    while True:
        if lexists(join(probe, ".git")):
            return probe
        parent = dirname(probe)
        if parent == probe:
            return path
        probe = parent
