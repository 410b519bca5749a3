"""A pass plugin that does not import."""
def broken(:
