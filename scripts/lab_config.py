"""Jupyter server settings for `make lab` (`jupyter lab --config=scripts/lab_config.py`).

`git status` counts a tracked file whose size differs from its index entry's as modified without
running the clean filter (scripts/strip_outputs_filter.sh), so a notebook saved with outputs would be
listed until `git add`. After each save, the notebook's index entry is set again to the blob it holds
with its recorded file stat cleared (`git update-index --cacheinfo`), so the next `git status` compares the
filtered content instead: a run notebook is clean, a notebook with real edits is listed. The index's
content never changes; outside a git repository, or for an untracked notebook, nothing happens.
"""

import subprocess
from pathlib import Path


def refresh_git_index(model, os_path, contents_manager, **kwargs):
    """Post-save hook: lets `git status` compare the saved notebook by content."""
    if model.get("type") != "notebook":
        return
    path = Path(os_path)

    def git(*args):
        return subprocess.run(["git", *args], cwd=path.parent, capture_output=True, text=True, check=False, timeout=30)

    try:
        # "mode blob stage<TAB>path", the path from the repository's top (what --cacheinfo takes)
        staged = [e for e in git("ls-files", "-z", "--stage", "--full-name", "--", path.name).stdout.split("\0") if e]
        if len(staged) != 1:
            return  # untracked, outside git, or in a merge conflict
        entry, _, top_path = staged[0].partition("\t")
        mode, blob, stage = entry.split()
        if stage != "0":
            return
        done = git("update-index", "--cacheinfo", f"{mode},{blob},{top_path}")
        error = done.stderr.strip() if done.returncode else None
    except (OSError, subprocess.SubprocessError) as failed:
        error = failed
    if error:
        contents_manager.log.warning("git index entry of %s not reset: %s", path, error)


c = get_config()  # noqa: F821 (defined by the config loader)
c.ContentsManager.post_save_hook = refresh_git_index
