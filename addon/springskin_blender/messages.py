"""Core messages in a rigger's words (issue #37, item 9): the core names
its functions and the papers' symbols ("ssk_cage_binding_create: ...",
"k_l = 18 with dt = 1 is beyond the explicit stability limit"); the panel
and the operators' reports name what the rigger sees: the bone, the
Spring node's fields."""

import re

#: The spring forces' symbols (Toothman 2020, core/bind/spring_rest.c) and
#: the Spring node's stiffness fields.
STIFFNESS = {"k_s": "Surface", "k_l": "Length", "k_t": "Torsion", "k_b": "Bone",
             "k_e": "Edit", "k_d": "Detail", "k_a": "Twist"}

_UNSTABLE = re.compile(r"(k_[a-z]) = ([-+.\deE]+)(?: \(times its map[^)]*\))? with dt = "
                       r"([-+.\deE]+) is beyond the ([\w-]+) stability limit.*?use (k_[a-z]) "
                       r"<= ([-+.\deE]+)")
_JOINT = re.compile(r"bone \d+ \(([^)]*)\), head \(([^)]*)\)")


def rigger_words(message):
    """`message` without core function names, with the spring stability
    refusal and a joint outside a cage said in terms of the Spring node
    and the bone."""
    message = re.sub(r"\bssk_[a-z_]+: ", "", message)
    if message.startswith("Deformer: "):
        message = message[len("Deformer: "):]
    unstable = _UNSTABLE.search(message)
    if unstable:
        symbol, value, dt, integrator, _symbol, safe = unstable.groups()
        field = STIFFNESS.get(symbol, symbol)
        before = re.sub(r"spring node ('[^']*'): $", r"the Spring node \1: ",
                        message[:unstable.start()])
        return ("%s%s stiffness %s with Time Step %s makes the %s integrator diverge: set %s "
                "to at most %s, or a smaller Time Step"
                % (before, field, value, dt, integrator, field, safe))
    if re.search(r"triangle \d+ \([^)]*\) is degenerate", message):
        message += " (in Edit mode, Mesh > Clean Up > Degenerate Dissolve removes it)"
    joint = _JOINT.search(message)
    if joint:
        return ("the joint at the head of bone '%s' (%s) is not inside the cage with room to "
                "spare: enlarge the cage around that joint" % joint.groups())
    return message
