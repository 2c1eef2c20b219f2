"""Suite-wide: Ctrl-C reaches the processes the tests start, however pytest itself was started.

A non-interactive shell starts background jobs with SIGINT ignored, and an ignored signal stays
ignored across exec: a Python child then never raises KeyboardInterrupt, so every test that
stops a child with Ctrl-C (the emulation's teardown, `inart run`) waited out its timeout.  A
handler, unlike SIG_IGN, is reset to the default by exec, so children get Ctrl-C again.
"""

import signal

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
