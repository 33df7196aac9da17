"""Where a command's tokenizer goes: -o checked before any work (a folder, standard output, one
file per vocabulary size) and written after it; a result that cannot be written where asked is
saved in a new temporary folder instead, which the error names."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from .. import formats
from ..errors import ArgumentError, BpeFastError, OutputError
from ..outputs import check_output

STDOUT = "-"                  # -o - : standard output


def where_to_write(path: str, fmt: str, option: str) -> str:
    """-o as given: "-" (standard output: a format of one file only), a folder (a name ending in
    "/", or an existing folder): the format's usual file in it (tokenizer.json), made if its parent
    exists; else the name itself. GPT-2's format is a folder of its own files already."""
    one_file = len(formats.output_files("tokenizer", fmt)) == 1
    if path == STDOUT:
        if not one_file:
            raise ArgumentError(f"{option} -: the {fmt} format is several files; give a file or folder name")
        return path
    is_folder = path.endswith(("/", os.sep)) or os.path.isdir(path)      # (isdir: False for a name too long)
    if not is_folder or not one_file:
        return path
    usual = formats.by_name(fmt).file_names
    if not usual:
        raise ArgumentError(f"{option} {path}: is a folder; give a file name in it ({os.path.join(path, 'tok.json')}), "
                            f"or --format huggingface for {os.path.join(path, 'tokenizer.json')}")
    if not Path(path).exists() and Path(path).resolve().parent.is_dir():
        Path(path).mkdir()
    return os.path.join(path, usual[0])


def check_tokenizer_output(path: str, fmt: str, inputs: list[str], option: str) -> list[Path]:
    """Every file writing ``path`` in ``fmt`` makes, checked before any work (GPT-2's folder,
    ``-o tok/``, is made if its parent exists)."""
    if path == STDOUT:
        return []
    files = formats.output_files(path, fmt)
    for file in files:
        if formats.by_name(fmt).makes_folder and not file.parent.exists() and file.parent.parent.is_dir():
            file.parent.mkdir()
        check_output(file, inputs, option)
    return files


def outputs_per_size(args, output: str) -> list[str]:
    """One output path per vocabulary size."""
    if len(args.vocab_size) == 1:
        return [output]
    if "{vocab_size}" not in output:
        raise ArgumentError(f"-o {output}: with several vocabulary sizes, -o must hold {{vocab_size}} "
                            f"(e.g. tok-{{vocab_size}}.json), so that each size gets its own file")
    return [output.replace("{vocab_size}", str(v)) for v in args.vocab_size]


def write_trained(toks: list, outputs: list[str], fmt: str) -> list[list[str]]:
    """Write each trained tokenizer. Everything about the outputs was checked before training, but
    the disk may fill up or a folder go meanwhile: then the training is not lost, but saved in a
    new temporary folder, which the error names."""
    try:
        return [write_tokenizer(tok, path, fmt) for tok, path in zip(toks, outputs)]
    except (BpeFastError, OSError) as exc:
        raise OutputError(f"{exc}; {save_elsewhere(_tokenizers_saver(toks), 'trained tokenizer')}") from None
    except Exception:                  # a bug in a writer: its traceback stays, but the training is kept
        print(f"bpe-fast train: {save_elsewhere(_tokenizers_saver(toks), 'trained tokenizer')}", file=sys.stderr)
        raise


def write_tokenizer(tok, path: str, fmt: str) -> list[str]:
    if path != STDOUT:
        return formats.write(tok, path, fmt)
    with tempfile.TemporaryDirectory(prefix="bpe-fast-stdout-") as folder:     # the writers write files
        [file] = formats.write(tok, os.path.join(folder, "tokenizer"), fmt)
        sys.stdout.buffer.write(Path(file).read_bytes())
        sys.stdout.flush()
    return ["standard output"]


def _tokenizers_saver(toks: list):
    """Saves the tokenizers in bpe_fast's JSON, which holds any (`bpe-fast convert` writes the others)."""
    return lambda folder: [formats.write(tok, os.path.join(folder, f"trained-{tok.vocab_size}.json"),
                                         formats.DEFAULT.name)[0] for tok in toks]


def save_elsewhere(save, what: str) -> str:
    """``save(folder)`` into a new temporary folder, for a result that could not be written where asked;
    says where it went (the files ``save`` returns)."""
    folder = tempfile.mkdtemp(prefix="bpe-fast-saved-")
    try:
        saved = save(folder)
    except Exception as exc:           # whatever stops this too, the first error is the one to report
        shutil.rmtree(folder, ignore_errors=True)
        return f"saving the {what} elsewhere failed too ({exc})"
    return f"the {what} is saved instead as {', '.join(saved)}"


def shown(path: str) -> str:
    """A written file as a summary line names it: its absolute path, or "standard output"."""
    return path if path == "standard output" else os.path.abspath(path)
