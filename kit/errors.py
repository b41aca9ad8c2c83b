"""The kit's error for bad input data."""


class DataError(ValueError):
    """Input data is wrong: the message names the file and, where there is one, the row."""
