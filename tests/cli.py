"""Run `python -m <module>` as a user would: a subprocess, its exit status, stdout and stderr."""
import subprocess
import sys


def run_cli(module: str, *args: str, cwd=None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)
