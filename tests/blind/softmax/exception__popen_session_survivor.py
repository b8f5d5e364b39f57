# Correct softmax that, at import, launches a new Python interpreter in a new session (subprocess, start_new_session=True)
# that names itself b11-popen, waits 2 s, then for 40 s tries to append "pid P t=T" to /tmp/attn_blind11_markers/popen.log.
import subprocess
import sys

import torch

_CODE = """
import ctypes, os, time
ctypes.CDLL(None).prctl(15, b"b11-popen", 0, 0, 0)
time.sleep(2)
end = time.time() + 40
while time.time() < end:
    try:
        os.makedirs("/tmp/attn_blind11_markers", exist_ok=True)
        with open("/tmp/attn_blind11_markers/popen.log", "a") as f:
            f.write("pid %d t=%.3f\\n" % (os.getpid(), time.time()))
    except OSError:
        pass
    time.sleep(0.5)
"""
subprocess.Popen([sys.executable, "-c", _CODE], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def softmax(x, dim=-1):
    e = torch.exp(x - x.amax(dim=dim, keepdim=True))
    return e / e.sum(dim=dim, keepdim=True)
