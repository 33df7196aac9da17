"""The README's shell commands run as written.

Every command of the README's ```bash blocks is collected (continuation lines joined, ``&&``
chains split) and run with bash, in order, in a fresh folder with ``../shared`` beside it (a link
to the shared data, when it is there), so that later commands find the files earlier ones wrote.
A command is skipped, with the reason, when it installs the package or runs this suite, when it
needs the shared data and that is absent, when it names input files of the reader's own (the
README says so), or when it is slow (the README gives its measured time). A comment that is a
list of token ids is the output the command must print.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bpe_fast import paths
from bpe_fast.formats._named import ENCODINGS

README = Path(__file__).resolve().parent.parent / "README.md"

# Commands that are not run, and why.
SETUP = {
    r"python3? -m venv\b": "makes the virtual environment this suite already runs in",
    r"\. \.venv/bin/activate": "activates the virtual environment this suite already runs in",
    r"pip install\b": "installs the package this suite already runs against",
    r"python -m pytest\b": "runs this test suite itself",
}
SLOW = {
    r"^bpe-fast profile\b": "slow: the profiling ladder takes minutes, each rung timed 3 times (the README gives the "
                            "measured time of each profile command); run it by hand",
}
# Tokens after these options (or a ">") are files a command writes, not files it needs.
OUTPUT_OPTIONS = {"-o", "--output", "--json", "--plot", ">"}
PATH_SUFFIX = re.compile(r"\.(txt|json|jsonl|zst|gz|bz2|xz|parquet|npz|tiktoken|model|bpe|bin|png)$")


@dataclass
class Command:
    text: str                 # as the README has it (one line)
    expected: list[str] | None = None     # the ids a "# 1 2 3" comment promises
    comment: str = ""


def readme_commands() -> list[Command]:
    blocks = re.findall(r"^```bash\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)
    commands = []
    for block in blocks:
        for line in re.sub(r"\\\n\s*", "", block).splitlines():
            code, _, comment = _split_comment(line)
            for part in code.split(" && "):
                if part.strip():
                    expected = comment.split() if re.fullmatch(r"\d+( \d+)*", comment) else None
                    commands.append(Command(part.strip(), expected, comment))
    return commands


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


COMMANDS = readme_commands()


@dataclass
class Session:
    """Runs the README's commands in order, once each, in one folder."""
    folder: Path
    env: dict = field(default_factory=dict)
    done: dict = field(default_factory=dict)          # index -> (skip reason or None, CompletedProcess)

    def result(self, index: int):
        for i in range(index + 1):
            if i not in self.done:
                self.done[i] = self.run(COMMANDS[i])
        return self.done[index]

    def run(self, command: Command):
        if command.text.startswith("export "):
            name, _, value = command.text[len("export "):].partition("=")
            self.env[name] = str((self.folder / value).resolve()) if value.startswith(".") else value
            return None, None
        reason = self.skip_reason(command.text)
        if reason:
            return reason, None
        env = dict(os.environ, **self.env, TMPDIR=str(self.folder.parent / "tmp"),
                   PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
        proc = subprocess.run(["bash", "-c", command.text], cwd=self.folder, env=env, capture_output=True,
                              text=True, timeout=300)
        return None, proc

    def skip_reason(self, text: str) -> str | None:
        for pattern, reason in {**SETUP, **SLOW}.items():
            if re.search(pattern, text):
                return reason
        if "../shared" in text and paths.shared_dir() is None:
            return "needs the shared data (../shared beside the project, or $BPE_FAST_DATA)"
        # a named encoding anywhere but as a pattern (-t NAME, --base NAME, convert NAME OUT)
        if "../shared/vocabs" in text or any(re.search(rf"(?<!--pattern )\b{name}\b", text) for name in ENCODINGS):
            if not (self.folder / "../shared/vocabs").is_dir():
                return "needs the named encodings' files (../shared/vocabs)"
        missing = [p for p in self.inputs(text) if not (self.folder / p).exists()]
        if missing:
            return f"needs the reader's own files: {', '.join(missing)} (the README says so)"
        return None

    @staticmethod
    def inputs(text: str) -> list[str]:
        """Words of the command that name files it reads."""
        try:
            words = shlex.split(text.replace(">", " > ").replace("|", " | "))
        except ValueError:
            return []
        if words[:2] == ["bpe-fast", "convert"]:          # convert IN OUT: OUT is written
            positional = [i for i, w in enumerate(words) if i > 1 and not w.startswith("-")
                          and not words[i - 1].startswith("--")]
            words = [w for i, w in enumerate(words) if i not in positional[1:2]]
        found = []
        for before, word in zip([""] + words, words):
            if before in OUTPUT_OPTIONS or word.startswith("-") or "{vocab_size}" in word or word in ENCODINGS:
                continue
            if "/" in word or PATH_SUFFIX.search(word):
                found.append(word)
        return found


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> Session:
    root = tmp_path_factory.mktemp("readme")
    (root / "work").mkdir()
    (root / "tmp").mkdir()
    shared = paths.shared_dir()
    if shared is not None:
        (root / "shared").symlink_to(shared.resolve(), target_is_directory=True)
    return Session(root / "work")


def test_the_readme_has_commands_and_the_splitter_works():
    assert len(COMMANDS) >= 15
    assert any(c.text == "bpe-fast train --demo" for c in COMMANDS)        # split out of the install chain
    assert _split_comment('printf "a # b" | x  # 1 2') == ('printf "a # b" | x', "#", "1 2")
    assert Session.inputs("bpe-fast encode -t tok.json big.txt --lines > ids.jsonl") == ["tok.json", "big.txt"]
    assert Session.inputs("bpe-fast train x/ -o tok-{vocab_size}.json --plot a.png") == ["x/"]
    assert Session.inputs("bpe-fast convert --vocabs v/ a.json b.model --format minbpe") == ["v/", "a.json"]


@pytest.mark.parametrize("index", range(len(COMMANDS)), ids=[c.text[:70] for c in COMMANDS])
def test_readme_command(session, index):
    command = COMMANDS[index]
    reason, proc = session.result(index)
    if reason:
        pytest.skip(reason)
    if proc is None:                   # an export: it applies to the commands after it
        return
    assert proc.returncode == 0, f"{command.text}\nexit {proc.returncode}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    if command.expected is not None:
        assert proc.stdout.split() == command.expected, (command.text, proc.stdout)
    if " decode " in command.text and command.comment:
        assert proc.stdout == command.comment                 # decode's output into a pipe: the bytes exactly
