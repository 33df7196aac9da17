"""The errors bpe_fast raises for bad input. Each message names the argument or file at fault."""


class BpeFastError(ValueError):
    """Base class: bad input that the user can fix (the CLI prints it without a traceback)."""


class InputError(BpeFastError):
    """A file or document that cannot be read as text: missing, a directory, invalid UTF-8..."""


class EmptyCorpusError(BpeFastError):
    """The input holds no text to learn from."""
