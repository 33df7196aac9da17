"""Every shell and Python example of README.md and docs/*.md runs as written; the pages' links hold.

Each page runs in a fresh folder with ``../shared`` beside it (a link to the shared data, when it
is there), its blocks in order, so that later ones find the files earlier ones wrote. A ```bash
block runs command by command (continuation lines joined, ``&&`` chains split) with bash; a
```python block runs whole, in one namespace per page, as a reader pasting the page's blocks into
one session would. A page's blocks all run in one subprocess (this file run as a script:
``run_page``), so no example touches the suite's own process.

A step is skipped, with the reason, when it installs the package or runs this suite; when it
needs the shared data or the named encodings' files and they are absent; when it names input
files of the reader's own that are not there (the page says so); when it needs a file that a
skipped step would have written; when it needs an extra that is not installed; when it is slow:
the profiling ladder (minutes: run it by hand) and the blocks marked ``<!-- slow: why -->`` on the
line before them (run by the whole suite, not by ``-m "not slow"``). A block that only shows
output, or that cannot run here (it needs a cluster's address), is ```text or ```console and is
not run. A comment that is a list of token ids is the output the command must print.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
WRITTEN = [*PAGES, ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md"]    # the pages whose links must hold
TOPICS = ["training", "big-corpora", "variants", "encoding-and-formats", "data-preparation", "cli",
          "quality-report", "architecture", "performance"]
RUN = {"bash", "python"}
NOT_RUN = {"text", "console", "json"}

# Commands that are not run, and why.
SETUP = {
    r"python3? -m venv\b": "makes the virtual environment this suite already runs in",
    r"\. \.venv/bin/activate": "activates the virtual environment this suite already runs in",
    r"pip install\b": "installs the package this suite already runs against",
    r"python -m pytest\b": "runs this test suite itself",
}
SLOW = {
    r"^bpe-fast profile\b": "slow: the profiling ladder takes minutes, each rung timed 3 times (docs/workshop.md "
                            "gives the measured time of each profile command); run it by hand",
}
# Tokens after these options (or a ">") are files a command writes, not files it needs.
OUTPUT_OPTIONS = {"-o", "--output", "--json", "--plot", ">"}
PATH_SUFFIX = re.compile(r"\.(txt|json|jsonl|zst|gz|bz2|xz|parquet|npz|npy|tiktoken|model|bpe|bin|idx|png)$")
FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
SLOW_MARK = re.compile(r"^<!--\s*slow:\s*(.+?)\s*-->$")


@dataclass
class Step:
    """One thing a page runs: a shell command, or a whole Python block."""
    page: str                 # relative to the project root
    line: int                 # where it is in the page
    kind: str                 # "bash" or "python"
    text: str
    slow: str | None = None   # why the block is marked slow
    expected: list[str] | None = None     # the ids a "# 1 2 3" comment promises
    comment: str = ""

    @property
    def name(self) -> str:
        head = self.text.strip().splitlines()[0] if self.kind == "bash" else "python"
        return f"{self.page}:{self.line} {head[:60]}"


def fences(text: str) -> list[tuple[int, str, str, str | None]]:
    """(line, language, code, slow reason) of each fenced block of a page."""
    found = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip().splitlines()
        mark = SLOW_MARK.match(before[-1].strip()) if before else None
        found.append((text.count("\n", 0, m.start()) + 2, m.group(1), m.group(2), mark.group(1) if mark else None))
    return found


def page_steps(page: Path) -> list[Step]:
    return steps_of_text(str(page.relative_to(ROOT)), page.read_text(encoding="utf-8"))


def steps_of_text(name: str, text: str) -> list[Step]:
    """The steps of a page: each Python block whole, each shell command apart."""
    steps = []
    for line, language, code, slow in fences(text):
        if language == "python":
            steps.append(Step(name, line, "python", code, slow))
        elif language == "bash":
            for offset, command in _shell_lines(code):
                code_part, _, comment = _split_comment(command)
                expected = comment.split() if re.fullmatch(r"\d+( \d+)*", comment) else None
                steps += [Step(name, line + offset, "bash", part.strip(), slow, expected, comment)
                          for part in code_part.split(" && ") if part.strip()]
    return steps


def _shell_lines(code: str) -> list[tuple[int, str]]:
    """(offset in the block, line) of a shell block, a line ending in a backslash joined with the next."""
    found: list[tuple[int, str]] = []
    held: tuple[int, str] | None = None
    for offset, line in enumerate(code.splitlines()):
        if held is not None:
            offset, line = held[0], held[1] + line.lstrip()
        held = (offset, line.rstrip()[:-1]) if line.rstrip().endswith("\\") else None
        if held is None:
            found.append((offset, line))
    return found


def _split_comment(line: str) -> tuple[str, str, str]:
    """The line's code and its trailing comment (a "#" outside quotes, after a space)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] == " "):
            return line[:i].rstrip(), "#", line[i + 1:].strip()
    return line.rstrip(), "", ""


def inputs(text: str) -> list[str]:
    """Words of a command that name files it reads."""
    try:
        words = shlex.split(text.replace(">", " > ").replace("|", " | "))
    except ValueError:
        return []
    if words[:2] == ["bpe-fast", "convert"]:          # convert IN OUT: OUT is written
        positional = [i for i, w in enumerate(words) if i > 1 and not w.startswith("-")
                      and not words[i - 1].startswith("--")]
        words = [w for i, w in enumerate(words) if i not in positional[1:2]]
    from bpe_fast import ENCODINGS
    found = []
    for before, word in zip([""] + words, words):
        if before in OUTPUT_OPTIONS or word.startswith("-") or "{vocab_size}" in word or word in ENCODINGS:
            continue
        if "/" in word or PATH_SUFFIX.search(word):
            found.append(word)
    return found


def outputs(step: Step) -> list[str]:
    """Files a step writes (as far as its text says): what a later step cannot have if it is skipped."""
    if step.kind == "python":
        return [m.group(1) for m in re.finditer(r"""["']([\w./{}-]+)["']""", step.text)
                if PATH_SUFFIX.search(m.group(1).rstrip("/")) or m.group(1).endswith("/")]
    try:
        words = shlex.split(step.text.replace(">", " > "))
    except ValueError:
        return []
    written = [word for before, word in zip([""] + words, words) if before in OUTPUT_OPTIONS]
    if words[:2] == ["bpe-fast", "convert"]:
        written += [w for w in words[2:] if not w.startswith("-")][1:2]
    return [re.sub(r"\{vocab_size\}.*", "", w) for w in written]


def static_reason(step: Step, run_slow: bool) -> str | None:
    """Why a step is not run, from its text and the folder it runs in (None: it runs)."""
    from bpe_fast import ENCODINGS
    if step.slow and not run_slow:
        return f"slow: {step.slow} (the whole suite runs it)"
    if step.kind == "bash":
        for pattern, reason in {**SETUP, **SLOW}.items():
            if re.search(pattern, step.text):
                return reason
    if "../shared" in step.text and not Path("../shared/corpora").is_dir():
        return "needs the shared data (../shared beside the project, or $BPE_FAST_DATA)"
    # a named encoding anywhere but as a pattern (-t NAME, --base NAME, load("NAME"))
    if "../shared/vocabs" in step.text or any(re.search(rf"(?<!--pattern )(?<!pattern=[\"']){name}\b", step.text)
                                              for name in ENCODINGS):
        if not Path("../shared/vocabs").is_dir():
            return "needs the named encodings' files (../shared/vocabs)"
    return None


# -- the page's run, in its own process ------------------------------------------------------------

def run_page(page: Path, run_slow: bool) -> list[dict]:
    """Runs a page's steps in order in the current folder; one result per step."""
    namespace: dict = {"__name__": "__main__"}
    skipped: dict[str, str] = {}          # file -> why the step that writes it was skipped
    broken: str | None = None             # a Python block not run through: the namespace is not what later ones expect
    results = []
    for step in page_steps(page):
        reason = static_reason(step, run_slow) or _needs_skipped(step, skipped)
        if reason is None and step.kind == "bash" and not step.text.startswith("export "):
            missing = [p for p in inputs(step.text) if not Path(p).exists()]
            reason = f"needs the reader's own files: {', '.join(missing)} (the page says so)" if missing else None
        if reason is None and step.kind == "python" and broken:
            reason = f"not run: {broken}, and the page's Python blocks share their names"
        result = {"status": "skipped", "reason": reason} if reason else (
            _run_bash(step) if step.kind == "bash" else _run_python(step, namespace))
        if result["status"] == "skipped":
            skipped.update({name: f"{step.page}:{step.line}" for name in outputs(step) if not Path(name).exists()})
        if result["status"] != "ok" and step.kind == "python" and not broken:
            broken = f"the Python block at {step.page}:{step.line} was {result['status']}"
        results.append(result)
    return results


def _needs_skipped(step: Step, skipped: dict[str, str]) -> str | None:
    for name, where in skipped.items():
        if re.search(rf"(?<![\w./-]){re.escape(name)}(?![\w-])", step.text):
            return f"needs {name}, which the skipped step at {where} writes"
    return None


def _run_bash(step: Step) -> dict:
    if step.text.startswith("export "):
        name, _, value = step.text[len("export "):].partition("=")
        os.environ[name] = str(Path(value).resolve()) if value.startswith(".") else value
        return {"status": "ok", "returncode": 0, "stdout": "", "stderr": ""}
    proc = subprocess.run(["bash", "-c", step.text], capture_output=True, text=True, timeout=300)
    extra = re.search(r"pip install '?bpe_fast\[\w+\]", proc.stderr)
    if proc.returncode != 0 and extra:
        return {"status": "skipped", "reason": f"needs an extra that is not installed: {proc.stderr.strip()}"}
    return {"status": "ok" if proc.returncode == 0 else "failed", "returncode": proc.returncode,
            "stdout": proc.stdout, "stderr": proc.stderr}


def _run_python(step: Step, namespace: dict) -> dict:
    from bpe_fast import MissingExtraError
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(step.text, f"{step.page}:{step.line}", "exec"), namespace)
    except MissingExtraError as e:
        return {"status": "skipped", "reason": f"needs an extra that is not installed: {e}"}
    except Exception:
        return {"status": "failed", "stdout": out.getvalue(), "stderr": err.getvalue() + traceback.format_exc()}
    return {"status": "ok", "stdout": out.getvalue(), "stderr": err.getvalue()}


# -- the tests -------------------------------------------------------------------------------------

STEPS = {page: page_steps(page) for page in PAGES}
PARAMS = [pytest.param(page, i, id=step.name, marks=[pytest.mark.slow] if step.slow else [])
          for page, steps in STEPS.items() for i, step in enumerate(steps)]


@pytest.fixture(scope="module")
def ran(tmp_path_factory, request):
    """The results of a page's steps, run once per page (on first use) in a folder of its own."""
    from bpe_fast import paths
    run_slow = "not slow" not in (request.config.getoption("markexpr", "") or "")
    done: dict[Path, list[dict]] = {}

    def results(page: Path) -> list[dict]:
        if page not in done:
            root = tmp_path_factory.mktemp(page.stem)
            for folder in ("work", "tmp"):
                (root / folder).mkdir()
            shared = paths.shared_dir()
            if shared is not None:
                (root / "shared").symlink_to(shared.resolve(), target_is_directory=True)
            out = root / "results.json"
            env = dict(os.environ, TMPDIR=str(root / "tmp"),
                       PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
            command = [sys.executable, __file__, str(page), str(out)] + (["--slow"] if run_slow else [])
            proc = subprocess.run(command, cwd=root / "work", env=env, capture_output=True, text=True, timeout=900)
            assert proc.returncode == 0, proc.stderr[-3000:]
            done[page] = json.loads(out.read_text(encoding="utf-8"))
        return done[page]
    return results


@pytest.mark.parametrize(("page", "index"), PARAMS)
def test_example(ran, page, index):
    step, result = STEPS[page][index], ran(page)[index]
    if result["status"] == "skipped":
        pytest.skip(result["reason"])
    said = f"{step.name}\n{step.text}\nexit {result.get('returncode')}\n{result['stderr'][-3000:]}"
    assert result["status"] == "ok", said
    if step.kind == "bash":
        assert "Traceback" not in result["stderr"], said
        if step.expected is not None:
            assert result["stdout"].split() == step.expected, (step.text, result["stdout"])
        if " decode " in step.text and step.comment:
            assert result["stdout"] == step.comment      # decode's output into a pipe: the bytes exactly


def test_the_pages_have_runnable_examples_and_the_parser_works():
    assert len(STEPS[README]) >= 6 and sum(len(s) for s in STEPS.values()) >= 60
    assert any(s.text == "bpe-fast train --demo" for s in STEPS[README])   # split out of the install chain
    assert _split_comment('printf "a # b" | x  # 1 2') == ('printf "a # b" | x', "#", "1 2")
    assert inputs("bpe-fast encode -t tok.json big.txt --lines > ids.jsonl") == ["tok.json", "big.txt"]
    assert inputs("bpe-fast train x/ -o tok-{vocab_size}.json --plot a.png") == ["x/"]
    assert inputs("bpe-fast convert --vocabs v/ a.json b.model --format minbpe") == ["v/", "a.json"]
    steps = steps_of_text("docs/x.md", "a\n<!-- slow: a cluster -->\n```bash\nbpe-fast count a.txt \\\n"
                                       "    -o t.npz  # 1 2\n```\n\n```python\nx = 1\n```\n```text\nnot run\n```\n")
    assert [(s.kind, s.text, s.slow, s.expected) for s in steps] == [
        ("bash", "bpe-fast count a.txt -o t.npz", "a cluster", ["1", "2"]), ("python", "x = 1\n", None, None)]
    assert outputs(steps[0]) == ["t.npz"] and outputs(Step("p", 1, "python", 'tok.save("hf/")\nx = "a b"')) == ["hf/"]
    assert _needs_skipped(Step("p", 1, "bash", "bpe-fast show -t tok.json x"), {"tok.json": "p:1"})
    assert not _needs_skipped(Step("p", 1, "bash", "bpe-fast show -t my-tok.json x"), {"tok.json": "p:1"})


def test_every_block_says_whether_it_runs():
    """A shell or Python block in a fence the tests do not run (```sh, ```py, no language) would
    silently go stale: every block is one the tests run, or one marked as shown only."""
    for page in PAGES:
        for line, language, _, _ in fences(page.read_text(encoding="utf-8")):
            assert language in RUN | NOT_RUN, f"{page.name}:{line}: ```{language} (use bash, python, text or console)"


def test_the_front_page_is_short_and_the_docs_cover_every_topic():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200
    assert {f"{topic}.md" for topic in TOPICS} <= {p.name for p in DOCS.glob("*.md")}
    readme = README.read_text(encoding="utf-8")
    for page in DOCS.glob("*.md"):
        assert f"(docs/{page.name})" in readme, f"the README does not link {page.name}"
        assert "](../README.md)" in page.read_text(encoding="utf-8"), f"{page.name} does not link back to the README"


def test_the_set_up_commands_are_the_ones_ci_runs():
    first = fences(README.read_text(encoding="utf-8"))[0]
    assert first[1:3] == ("bash", 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[dev]" && '
                                  "bpe-fast train --demo\npython -m pytest\n")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in first[2].splitlines():
        assert command in ci, command


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    for m in re.finditer(r"^#{1,6} +(.+?) *$", text, re.M):
        anchor, n = github_anchor(m.group(1)), 1
        while anchor in found:                # a repeated heading gets -1, -2, ...
            anchor, n = f"{github_anchor(m.group(1))}-{n}", n + 1
        found.add(anchor)
    return found


def test_github_anchors():
    assert github_anchor("Encode once (8): longer chunks (issue 30), 2026-11-28") == \
        "encode-once-8-longer-chunks-issue-30-2026-11-28"
    assert github_anchor("`base=`: continue a tokenizer") == "base-continue-a-tokenizer"


def test_every_link_between_the_pages_leads_somewhere():
    """Relative links name a file of the project, and a #fragment a heading of that page."""
    broken = []
    for page in WRITTEN:
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, fragment = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif fragment and file.suffix == ".md" and fragment not in anchors(file):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_figures_are_pointed_to_by_a_heading_of_results():
    """A page that says where a figure comes from ("RESULTS.md, "Encode once (8)"") names a heading
    that is there: a pointer that outlives a renamed heading would send the reader nowhere."""
    headings = re.findall(r"^## (.+)$", (ROOT / "benchmarks" / "RESULTS.md").read_text(encoding="utf-8"), re.M)
    named = []
    for page in WRITTEN:
        text = re.sub(r"\s+", " ", page.read_text(encoding="utf-8"))
        named += re.findall(r'RESULTS(?:\.md)?\]?(?:\([^)]*\))?,? "([^"]+)"', text)
    assert len(named) >= 10
    missing = [n for n in named if not any(h.startswith(n) for h in headings)]
    assert not missing, missing


def test_no_machine_specific_paths_in_the_pages():
    pattern = re.compile(r"(?<![\w.])/(?:work|root|home|Users)/[\w.-]+")
    offenders = [f"{p.name}: {m.group()}" for p in WRITTEN for m in pattern.finditer(p.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def main(argv: list[str]) -> None:
    page, out = Path(argv[0]), Path(argv[1])
    sys.path[0] = ""                      # as an interactive session: the page's folder, not tests/
    out.write_text(json.dumps(run_page(page, run_slow="--slow" in argv)), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
