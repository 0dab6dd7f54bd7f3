"""The results/ and reports/ committed at git's HEAD, for the tests that check or reuse "the committed ones":
never the working tree's, which any run with --out . or --results . may have changed."""
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _git(*args: str) -> bytes:
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"needs a git checkout of archzoo to read the committed results/ and reports/ ({e})")


def committed_text(path: str) -> str:
    """One committed file (a path from the repository's root), as text."""
    return _git("show", f"HEAD:{path}").decode()


def extract_committed(folder: Path) -> Path:
    """results/ and reports/ as committed, under `folder`."""
    with tarfile.open(fileobj=io.BytesIO(_git("archive", "HEAD", "results", "reports"))) as tar:
        tar.extractall(folder, filter="data")
    return folder
