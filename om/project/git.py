"""Running git: the one program om runs, always read-only on the user's repositories.

Invariants:
- `run_git` runs `git ARGS` with no terminal prompt, no pager, the user's
  configuration as it is, standard input closed, and a deadline; past the
  deadline the process is killed and None returned, so a slow repository costs
  at most the deadline.
- FileNotFoundError means git is not installed; the caller decides what that
  means (identity: the repository is its folder, as before).
- Never imported on PostToolUse: `subprocess` costs milliseconds to import.
"""

def run_git(args, seconds):
    """`(exit code, stdout text)` of `git ARGS`, or None when it ran past `seconds`."""
    import subprocess

    env = {key: value for key, value in _environ().items() if not key.startswith("GIT_") or key in _KEEP}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    proc = subprocess.Popen(["git", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    return proc.returncode, out.decode("utf-8", "replace")


#: GIT_* variables that say where the user's configuration is, kept; the ones that
#: point git at another repository (GIT_DIR, GIT_WORK_TREE...) are dropped, since a
#: hook inherits the client's environment, not the folder's.
_KEEP = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_SYSTEM", "GIT_SSH", "GIT_SSH_COMMAND")


def _environ():
    import os

    return dict(os.environ)

