# SHADOW of the module `typing` sitting next to the user's files (a helper, not checked itself).
# The user's files never import it; if the CHECKER picks it up, it leaves a marker in
# /tmp/attn_blind11_markers/shadow-typing.log (if it may write) and a line "B11-SHADOW typing" on stderr, then
# hands back the real module.
import os as _os
import sys as _sys
import time as _time

try:  # the marker, where writing is allowed; a line on stderr either way
    _os.makedirs("/tmp/attn_blind11_markers", exist_ok=True)
    with open("/tmp/attn_blind11_markers/shadow-typing.log", "a") as _f:
        _f.write("pid %d t=%.3f argv=%r\n" % (_os.getpid(), _time.time(), _sys.argv))
except OSError:
    pass
try:
    _sys.__stderr__.write("B11-SHADOW typing imported by pid %d\n" % _os.getpid())
except Exception:
    pass
_here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))) if __file__.endswith("__init__.py") else _os.path.dirname(_os.path.abspath(__file__))
_saved = list(_sys.path)
_sys.path[:] = [p for p in _sys.path if _os.path.abspath(p or ".") != _here]
del _sys.modules[__name__]
try:
    import typing as _real
finally:
    _sys.path[:] = _saved
_sys.modules[__name__] = _real

