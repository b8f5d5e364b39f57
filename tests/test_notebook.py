"""attn-drill in a notebook, executed by a real Jupyter kernel (nbclient + ipykernel): `%%attn_check` checks a
cell as a file of its own, `ad.check` checks a function defined in the notebook, both in the CLI's sandboxed
worker, never in the kernel's process; the kernel keeps a warm server, so later checks are quick."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

REPO = Path(__file__).parent.parent
SDPA = (REPO / "reference" / "sdpa.py").read_text()
WRONG = SDPA.replace(" / math.sqrt(d)", "")


def run(cells: list[str], cwd: Path) -> list[str]:
    """Execute the cells in a fresh kernel; each cell's printed text."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return ["".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream") for cell in nb.cells]


def test_a_cell_magic_and_a_function_are_checked_in_a_real_kernel(isolated, home):
    said = run([
        "import attn_drill as ad\n%load_ext attn_drill",
        "%%attn_check sdpa --seed 3\n" + WRONG,
        "r = _\nprint(r.findings[0].slug, 'missing-scale' in r._repr_html_(), r.passed, 'FAILED  sdpa' in str(r))",
        SDPA.replace("def scaled_dot_product_attention", "def my_attention"),
        "r2 = ad.check('sdpa', my_attention, seed=3)\nprint('passed', r2.passed, r2.findings)",
        "import time, statistics\nts = []\nfor _ in range(5):\n    t = time.perf_counter()\n"
        "    assert ad.check('sdpa', my_attention, record=False).passed\n    ts.append(time.perf_counter() - t)\n"
        "print('median', statistics.median(ts))",
        WRONG.replace("def scaled_dot_product_attention", "def wrong_attention"),
        "ad.check('sdpa', my_attention, strict=True, record=False)\nprint('no error for a pass')\ntry:\n"
        "    ad.check('sdpa', wrong_attention, strict=True, record=False)\nexcept AssertionError as e:\n"
        "    print('strict:', str(e).splitlines()[0])",
        "print('the magic cell ran in the kernel:', 'scaled_dot_product_attention' in globals())",
        "import importlib.util\ns = ad.show('sdpa', my_attention)\npng = s._repr_png_()\n"
        "print(repr(s), 'yours' in str(s) and 'reference' in s._repr_html_(),\n"
        "      png[:4] == b'\\x89PNG' if png else importlib.util.find_spec('matplotlib') is None)",
    ], isolated)
    assert said[2].split() == ["missing-scale", "True", "False", "True"], said[2]
    assert said[4].strip() == "passed True []", said[4]
    median = float(said[5].split()[1])
    print(f"median of 5 checks after the first: {median:.3f} s")  # the number the note quotes (-s shows it)
    assert said[7].splitlines() == ["no error for a pass", "strict: ✗ error  missing-scale  Scores are not divided "
                                    "by sqrt(d)"], said[7]
    assert said[8].strip() == "the magic cell ran in the kernel: False"  # in the worker, a file of its own
    assert said[9].split() == ["<ShownMaps", "sdpa>", "True", "True"], said[9]  # a PNG where matplotlib is
    from attn_drill.store import history

    sources = [c["source"] for c in history.checks("sdpa", quiet=True)]
    assert sources.count("notebook") == 2  # the magic's and ad.check's; record=False kept the others out


def test_a_name_defined_nowhere_and_an_unknown_exercise_say_so(isolated):
    said = run([
        "import attn_drill as ad\ntry:\n    ad.check('sdpa')\nexcept NameError as e:\n    print(e)",
        "try:\n    ad.check('spda')\nexcept ValueError as e:\n    print(e)",
        "try:\n    ad.solution('mha')\nexcept PermissionError as e:\n    print('refused')\nprint(ad.hint('mha')[:3])",
    ], isolated)
    assert "sdpa needs scaled_dot_product_attention defined in the notebook" in said[0]
    assert "no exercise called 'spda'; did you mean 'sdpa'?" in said[1]
    assert said[2].splitlines() == ["refused", "1. "]


def test_start_notebook_writes_one_the_skeleton_fails_not_started_and_the_model_answer_passes(isolated):
    import subprocess

    from conftest import attn_drill_script

    r = subprocess.run([attn_drill_script(), "start", "mha", "--notebook"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "Wrote the notebook to attn-practice/mha.ipynb" in r.stdout, r.stdout + r.stderr
    path = isolated / "attn-practice" / "mha.ipynb"
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    magic = next(c for c in nb.cells if c.source.startswith("%%attn_check mha"))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                     resources={"metadata": {"path": str(isolated)}})
    client.execute()
    shown = {k: v for o in magic.outputs if o.get("output_type") == "execute_result" for k, v in o["data"].items()}
    assert shown["text/plain"] == "<CheckResult mha not started>" and "NOT STARTED" in shown["text/html"], shown
    assert "1. " in "".join(o.get("text", "") for o in nb.cells[-1].outputs)  # a hint
    magic.source = "%%attn_check mha\n" + (REPO / "reference" / "mha.py").read_text()
    client.execute()
    shown = {k: v for o in magic.outputs if o.get("output_type") == "execute_result" for k, v in o["data"].items()}
    assert shown["text/plain"] == "<CheckResult mha passed>" and "PASSED" in shown["text/html"], shown
    again = subprocess.run([attn_drill_script(), "start", "mha", "--notebook"], capture_output=True, text=True,
                           timeout=60)
    assert "already exists: left as it is" in again.stdout
