"""`.ci/run` runs the README's two commands as a newcomer does, in order, then the report check, and fails when
either command fails or a tracked file changed. Checked on a throw-away git repository whose README's commands
are stand-ins (a fake .venv/bin/python answers the report check), so nothing is installed."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[1]
FAKE_VENV = ("mkdir -p .venv/bin && printf '#!/bin/sh\\necho \"$@\" >> ran.log\\n' > .venv/bin/python "
             "&& chmod +x .venv/bin/python")


def readme(main: str, test: str) -> str:
    return (f"# x\n\n<!-- main-command -->\n```\n{main}\n```\n<!-- /main-command -->\n\n"
            f"<!-- test-command -->\n```\n{test}\n```\n<!-- /test-command -->\n")


def run_ci(tmp_path: Path, main: str, test: str) -> subprocess.CompletedProcess:
    repo = tmp_path / "clone"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "run", repo / ".ci" / "run")
    (repo / "README.md").write_text(readme(main, test))
    (repo / "tracked.txt").write_text("committed\n")
    (repo / ".gitignore").write_text(".venv/\nran.log\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(repo)]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    bin_dir = tmp_path / "bin"                  # chromium "installed", so the script asks apt-get for nothing
    bin_dir.mkdir()
    (bin_dir / "chromium").write_text("#!/bin/sh\n")
    (bin_dir / "chromium").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(repo / ".ci" / "run")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=HANG_GUARD_S)


def test_both_commands_run_in_order_then_the_report_check(tmp_path):
    done = run_ci(tmp_path, f"{FAKE_VENV} && echo main >> ran.log", "echo tests >> ran.log")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "clone" / "ran.log").read_text().splitlines() == [
        "main", "tests", "-m zoo.report --results . --check"]


@pytest.mark.parametrize("main, test", [("false", "true"), (FAKE_VENV, "false")])
def test_a_failing_command_fails_the_run(tmp_path, main, test):
    done = run_ci(tmp_path, main, test)
    assert done.returncode != 0
    assert not (tmp_path / "clone" / "ran.log").exists() or "--check" not in (tmp_path / "clone" / "ran.log").read_text()


def test_a_command_that_changes_a_tracked_file_fails_the_run(tmp_path):
    done = run_ci(tmp_path, f"{FAKE_VENV} && echo changed > tracked.txt", "true")
    assert done.returncode == 1
    assert "changed tracked files" in done.stderr and "tracked.txt" in done.stderr


def test_a_readme_without_the_test_command_fails_the_run(tmp_path):
    done = run_ci(tmp_path, FAKE_VENV, "")
    assert done.returncode == 1 and "README.md has no test-command between its markers" in done.stderr
