"""TextEnum: an enumeration of the words the analysis reads and writes (a rank's status, a
wait's kind, a verdict, ...). Its members are str, each equal to its word, and read as that
word wherever text is made of them (str(), %s, format(), JSON keys and values): the outputs are
byte for byte those of the bare strings the members stand for, and a member is compared with
another member, never with a literal."""
import enum


class TextEnum(str, enum.Enum):
    """A str-valued enumeration whose members read as their values."""

    def __str__(self) -> str:
        return str.__str__(self)
