"""The kinds of quantity a question's words name (a ratio, a mass, a duration) and the kind a value's unit measures.

"What gear ratio do the knee actuators use?" is not answered by "0.012 kg·m²": a number, but one of inertia. A
quantity word accepts the units of its kinds, and a value written with a unit of another kind does not answer it.
Only words whose kinds are clear are listed ("rate" is a baud rate, a frame rate or a rate of climb; "limit" any
limit); a value without a unit, or with one not listed, may answer any quantity. The check refuses only what it can
tell apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The units of each kind as a book writes them after a number; case matters (`mA` is not `MA`, `Nm` not `nm`).
# A kind whose unit begins with another kind's and a space goes first (`kg m²` is tried before `kg`,
# `degrees C` before `degrees`). A rate, `m/s` or `km per hour`, is a unit per unit of time (_PER_TIME).
_UNITS = {
    "inertia": r"kg\s?[·⋅*.]?\s?m(?:²|\^2|2)",
    "torque": r"[km]?N\s?[·⋅*.-]?\s?m|newton[- ]met(?:re|er)s?|lbf?[-·⋅ ]?ft|ft[-·⋅ ]?lbf?s?"
              r"|lbf?[-·⋅]in|in[-·⋅]lbf?s?",  # joined: "10 lb in the box" is a mass
    "ratio": r"%|percent|:1|x|×|dB",
    "mass": r"kg|g|mg|grams?|kilograms?|lbs?|pounds?|oz",
    "length": r"km|m|cm|mm|µm|μm|nm|metres?|meters?|(?:kilo|centi|milli)met(?:re|er)s?"
              r"|ft|feet|foot|inch(?:es)?|miles?",
    "time": r"s|ms|µs|μs|us|ns|min|h|hr|hrs|sec|secs|seconds?|milliseconds?|microseconds?|minutes?|hours?|days?",
    "frequency": r"Hz|kHz|MHz|GHz|fps|FPS",
    "speed": r"kph|mph",
    "angular speed": r"rpm|RPM",
    "temperature": r"℃|℉|(?:°|deg|degrees?)\s?(?:Celsius|Fahrenheit|C|F)|Celsius|Fahrenheit|kelvins?",
    "angle": r"°|deg|degrees?|rad|radians?|revs?|revolutions?|rotations?",
    "voltage": r"V|mV|kV|volts?",
    "current": r"A|mA|amps?|amperes?",
    "charge": r"mAh|Ah",
    "power": r"W|kW|mW|watts?|kilowatts?",
    "energy": r"J|kJ|Wh|kWh",
    "force": r"N|kN|newtons?|lbf",
    "pressure": r"Pa|kPa|MPa|bar|psi",
    "data": r"KB|kB|MB|GB|TB|KiB|MiB|GiB|TiB|bytes?|[kMG]?bits?",
    "data rate": r"bps|kbps|Mbps|Gbps|baud",
}
_KINDS = tuple((kind, re.compile(units)) for kind, units in _UNITS.items())
# The kind of a value per unit of time; a speed per second is an acceleration (`m/s²`). Any other (`N·m/s`) is
# none the check can tell.
_PER_TIME = {"length": "speed", "angle": "angular speed", "data": "data rate", "speed": "acceleration"}
# A number, then maybe a unit of the table, maybe per a unit of time; a unit ends where no unit character
# follows (`N·m/rad` is none of them, `5 steps` has none), so a unit that another begins with gives way to it
# (`lb` to `lb-ft`). A unit joined to more (`kg·m/s`, `rad per step`) is a compound the table does not know:
# no unit. A number inside a word (`v2`, `l_knee`) is no value.
_UNIT = "|".join(f"(?:{units})" for units in _UNITS.values())
_VALUE = re.compile(rf"(?<![\w.])\d+(?:[.,]\d+)*\s?-?\s?(?:(?P<unit>{_UNIT})"
                    rf"(?:(?P<per>\s?/\s?|\s+per\s+)(?:{_UNITS['time']})(?P<squared>²|\^2|2|\s+squared)?)?"
                    r"(?![-.]\w|\s+per\b))?(?![\w/·⋅*^²³%°])")

# The kinds that answer a quantity word. A quantity word not listed ("rate", "limit", "how much") may be of any kind.
_ACCEPTS = {
    "ratio": {"ratio"}, "percentage": {"ratio"},
    "mass": {"mass"}, "weight": {"mass", "force"}, "heavy": {"mass"},
    "length": {"length"}, "height": {"length"}, "tall": {"length"}, "distance": {"length"},
    "far": {"length", "time"}, "long": {"length", "time"},  # "how far ahead" may be in seconds
    "duration": {"time"}, "latency": {"time"}, "timeout": {"time"},
    "period": {"time", "frequency"}, "interval": {"time", "frequency"}, "frequency": {"frequency", "time"},
    "often": {"frequency", "time"},
    "speed": {"speed", "angular speed"},
    "angle": {"angle"}, "temperature": {"temperature"},
    "voltage": {"voltage"}, "draw": {"power", "current"}, "power": {"power"},  # "current" is also "present"
    "torque": {"torque"}, "force": {"force"},
    "memory": {"data"}, "bandwidth": {"data rate", "frequency"},
}


def accepted_kinds(quantity_words: Iterable[str]) -> frozenset[str] | None:
    """The kinds of value that answer a question naming these quantity words ("gear ratio": ratio), all of them
    together; None, any kind, when it names none or one of unclear kind."""
    words = set(quantity_words)
    if not words or not words <= _ACCEPTS.keys():
        return None
    return frozenset().union(*(_ACCEPTS[word] for word in words))


def value_kinds(text: str) -> list[str | None]:
    """The kind of each value `text` states, in order: None for a number without a unit of the table."""
    return [_kind_of(match) for match in _VALUE.finditer(text)]


def _kind_of(value: re.Match) -> str | None:
    unit = value.group("unit")
    kind = next((kind for kind, units in _KINDS if units.fullmatch(unit)), None) if unit else None
    if value.group("per"):
        kind = _PER_TIME.get(kind)
    if value.group("squared"):
        kind = _PER_TIME.get(kind)
    return kind


def states_kind(text: str, kinds: Iterable[str]) -> bool:
    """Whether `text` may state a value of one of `kinds`: False only when each number it writes has a unit of
    another kind (a value in words, "twelve", has none to tell)."""
    accepted, stated = set(kinds), value_kinds(text)
    return not stated or any(kind is None or kind in accepted for kind in stated)
