"""Running gdb commands from the front end, their output kept from the user.

  quietly(command)   gdb.execute(command, to_string=True) for its effect alone
  output(command)    the text a read-only command prints

What gdb captures for to_string includes its debug logs: with `set debug remote 1` the remote
protocol's packets, binary ones too (a library's bytes, vFile reads). gdb 13 decodes that
capture strictly as UTF-8 once the command has run, so a user tracing the link to a gdbserver
would see the command fail after it succeeded. A failure to decode is therefore not the
command's: quietly() takes the command as done (only its unwanted output was lost), output()
runs the read-only command again with the remote trace off for that moment and gives the
user's setting back. A failure of the command itself is gdb.error as before.
"""
import gdb


def quietly(command):
    try:
        gdb.execute(command, to_string=True)
    except UnicodeDecodeError:
        pass  # it ran; its output, not wanted, was not text


def output(command):
    try:
        return gdb.execute(command, to_string=True)
    except UnicodeDecodeError:
        pass
    before = gdb.parameter("debug remote")
    gdb.execute("set debug remote 0", to_string=True)
    try:
        return gdb.execute(command, to_string=True)
    finally:
        gdb.execute("set debug remote %d" % before, to_string=True)
