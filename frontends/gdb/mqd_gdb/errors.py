"""MqdError: every failure the front end reports. Its text is shown to the user as it is (the
commands prefix "mqd: "), in the DLL's or the proxy's own words where they come from there,
never as a Python traceback."""


class MqdError(Exception):
    """A failure to show the user as it is: the DLL's or the proxy's own words."""
