"""The base of errors caused by the user's input (a model, IR, a schedule, options).

Command-line tools print such an error's message as the whole diagnostic; any other
exception is reported with its type, as it is a bug of ours.
"""


class StcError(Exception):
    """An error in the user's input; the message names where and the numbers involved."""
