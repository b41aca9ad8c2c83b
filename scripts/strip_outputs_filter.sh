#!/bin/sh
# Installs this repository's git filter for notebooks (what `make lab` runs): whenever git reads a
# notebook (git add, git diff, git status), it sees the notebook as committed: nbstripout removes the
# outputs, execution counts and the cell metadata JupyterLab adds, and the notebook's kernelspec and
# language_info are set back to what every committed notebook holds. The files on disk keep their
# outputs. .gitattributes (committed) names the filter for notebooks/*.ipynb; without this
# configuration git ignores it.
#   usage: scripts/strip_outputs_filter.sh PYTHON                  install (a python with nbstripout)
#          scripts/strip_outputs_filter.sh --clean PYTHON [FILE]   the filter: FILE or stdin to stdout
# Undo: git config --remove-section filter.nbstripout; git config --remove-section diff.ipynb
set -eu

# What every committed notebook's metadata holds; a kernel replaces both when it starts
# (JupyterLab's python3 kernel is "Python 3 (ipykernel)", language_info gains the version and more).
KERNELSPEC='{"display_name": "Python 3", "language": "python", "name": "python3"}'
LANGUAGE_INFO='{"name": "python"}'
# Cell metadata JupyterLab writes beyond nbstripout's defaults (which strip metadata.widgets and the
# cells' execution, collapsed, scrolled, ExecuteTime, heading_collapsed and hidden): hidden inputs/outputs.
CELL_KEYS="cell.metadata.jupyter"
# nbformat's own layout (nbformat.writes), so the committed files pass through unchanged.
NORMALIZE="
import json, sys
nb = json.load(sys.stdin.buffer)
nb['metadata']['kernelspec'] = json.loads(sys.argv[1])
nb['metadata']['language_info'] = json.loads(sys.argv[2])
text = json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(',', ': '))
sys.stdout.buffer.write((text + '\n').encode('utf-8'))
"

if [ "${1:-}" = --clean ]; then
    PY=${2:?usage: $0 --clean PYTHON [FILE]}
    shift 2
    # --keep-id: the committed cell ids (nbstripout renumbers them otherwise); --drop-empty-cells:
    # the empty cell Shift+Enter adds below the last one (no committed notebook has an empty cell).
    cat ${1+"$@"} \
        | "$PY" -m nbstripout --keep-id --drop-empty-cells --extra-keys "$CELL_KEYS" \
        | "$PY" -c "$NORMALIZE" "$KERNELSPEC" "$LANGUAGE_INFO"
    exit
fi

PY=${1:?usage: $0 PYTHON}
"$PY" -m nbstripout --version >/dev/null
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
CMD="sh \"$SELF\" --clean \"$PY\""
git config filter.nbstripout.clean "$CMD"
git config filter.nbstripout.smudge cat
git config filter.nbstripout.required true
git config diff.ipynb.textconv "$CMD"
# nbstripout reads this too; earlier versions of this script listed language_info's fields here.
git config --unset-all filter.nbstripout.extrakeys || true
