"""The kit's error for bad input data."""


class DataError(ValueError):
    """Input data is wrong: the message names the file and, where there is one, the row."""


class OutputError(ValueError):
    """An output path the kit refuses to write: it exists and is not the kit's own of that kind."""
