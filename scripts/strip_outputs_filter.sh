#!/bin/sh
# Installs nbstripout as this repository's git filter for notebooks (what `make lab` runs):
# outputs, execution counts and the kernel's language details are stripped whenever git reads
# a notebook (git add, git diff, git status), so running notebooks in JupyterLab never dirties
# the repository, while the files on disk keep their outputs. .gitattributes (committed) names
# the filter for notebooks/*.ipynb; without this configuration git ignores it.
#   usage: scripts/strip_outputs_filter.sh PYTHON     (a python with nbstripout installed)
# Undo: git config --remove-section filter.nbstripout; git config --remove-section diff.ipynb
set -eu
PY=${1:?usage: $0 PYTHON}
"$PY" -m nbstripout --version >/dev/null
# --keep-id: keep the committed cell ids (nbstripout renumbers them otherwise).
CMD="\"$PY\" -m nbstripout --keep-id"
git config filter.nbstripout.clean "$CMD"
git config filter.nbstripout.smudge cat
git config filter.nbstripout.required true
git config diff.ipynb.textconv "$CMD -t"
# What a kernel adds to the notebook's metadata on every run (the committed files say only the language).
git config filter.nbstripout.extrakeys "metadata.language_info.codemirror_mode metadata.language_info.file_extension metadata.language_info.mimetype metadata.language_info.nbconvert_exporter metadata.language_info.pygments_lexer metadata.language_info.version"
