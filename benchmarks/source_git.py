"""Read-only access to a mirrored git repository (a bare git directory, no work tree) at a pinned commit.

Used by benchmarks/extract_sources.py: every published figure is read with `git show COMMIT:PATH`, and every
history walk starts from the pinned commit, never from the mirror's current HEAD, so a mirror that is fetched
again later gives the same rows.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


class MirrorError(Exception):
    """The mirror cannot be read as asked (not a git directory, pinned commit absent, git failed)."""


@dataclass(frozen=True)
class Mirror:
    git_dir: Path
    pin: str          # the full commit every history walk starts from
    repo: str         # owner/name, as cited

    def git(self, *args: str) -> str:
        try:
            done = subprocess.run(["git", "--git-dir", str(self.git_dir), *args], capture_output=True,
                                  check=False, timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise MirrorError(f"git {args[0]} in {self.git_dir} failed: {e}") from e
        if done.returncode != 0:
            raise MirrorError(f"git {' '.join(args[:2])} in {self.git_dir} failed: "
                              f"{done.stderr.decode('utf-8', 'replace').strip()}")
        return done.stdout.decode("utf-8")

    def check(self) -> None:
        """Raise MirrorError unless the directory is a git directory holding the pinned commit."""
        if not self.git_dir.is_dir():
            raise MirrorError(f"{self.git_dir} is not a directory")
        found = self.git("rev-parse", "--verify", "--quiet", f"{self.pin}^{{commit}}").strip()
        if found != self.pin:
            raise MirrorError(f"{self.git_dir} does not hold commit {self.pin} of {self.repo}")

    def show(self, commit: str, path: str) -> str | None:
        """The file's text at the commit, or None where the commit does not have it."""
        listed = self.git("ls-tree", commit, "--", path).strip()
        return self.git("show", f"{commit}:{path}") if listed else None

    def touching(self, path: str) -> list[tuple[str, str]]:
        """(commit, ISO date) of every commit reachable from the pin that changed the path, newest first.
        NB: --no-renames, so a renamed file's old name keeps its own history."""
        out = self.git("log", self.pin, "--no-renames", "--format=%H %cs", "--", path)
        return [tuple(line.split(" ", 1)) for line in out.splitlines() if line.strip()]

    def versions(self, path: str) -> list[tuple[str, str]]:
        """(commit, date) of each commit whose tree holds a new version of the path (deletions left out)."""
        return [(c, d) for c, d in self.touching(path) if self.git("ls-tree", c, "--", path).strip()]

    def paths_ever(self, under: str) -> list[str]:
        """Every file path that existed under a folder in the pin's history, sorted."""
        out = self.git("log", self.pin, "--no-renames", "--format=", "--name-only", "--", under)
        return sorted({line for line in out.splitlines() if line.strip()})

    def date(self, commit: str) -> str:
        return self.git("show", "-s", "--format=%cs", commit).strip()
