#!/usr/bin/env python3
"""Run a program the way systemd runs a Type=notify, socket-activated,
watchdog-supervised service, for tests/e2e_systemd.sh.

usage: e2e_sd.py [--stream] [--watchdog-pid other] NOTIFY_LOG SOCKET -- PROGRAM ARGS...

Binds SOCKET (SOCK_SEQPACKET, or SOCK_STREAM with --stream) and listens,
binds a SOCK_DGRAM notify socket next to NOTIFY_LOG, then starts PROGRAM
with the listening socket as descriptor 3 and LISTEN_FDS=1, LISTEN_PID
(its own pid), LISTEN_FDNAMES, NOTIFY_SOCKET, WATCHDOG_USEC=200000 and
WATCHDOG_PID (its pid, or another one with --watchdog-pid other).  Every
datagram received is appended to NOTIFY_LOG as one line, its newlines
turned into spaces.  SIGTERM is passed on; exits with the program's
status (128 + signal if it was killed).
"""
import os
import select
import signal
import socket
import sys


def main(argv):
    stream = False
    wd_pid = "self"
    while argv and argv[0].startswith("--") and argv[0] != "--":
        if argv[0] == "--stream":
            stream = True
            argv = argv[1:]
        elif argv[0] == "--watchdog-pid":
            wd_pid = argv[1]
            argv = argv[2:]
        else:
            sys.exit("e2e_sd.py: unknown option " + argv[0])
    if len(argv) < 4 or argv[2] != "--":
        sys.exit(__doc__)
    log_path, sock_path, prog = argv[0], argv[1], argv[3:]

    notify_path = log_path + ".sock"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    listen = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM if stream else socket.SOCK_SEQPACKET)
    listen.bind(sock_path)
    os.chmod(sock_path, 0o666)
    listen.listen(128)

    pid = os.fork()
    if pid == 0:
        os.dup2(listen.fileno(), 3, inheritable=True)
        env = dict(os.environ)
        env.update({
            "LISTEN_FDS": "1",
            "LISTEN_PID": str(os.getpid()),
            "LISTEN_FDNAMES": "xtcd.socket",
            "NOTIFY_SOCKET": notify_path,
            "WATCHDOG_USEC": "200000",
            "WATCHDOG_PID": str(os.getpid() if wd_pid == "self" else 1),
        })
        os.execve(prog[0], prog, env)

    listen.close()
    signal.signal(signal.SIGTERM, lambda s, f: os.kill(pid, signal.SIGTERM))
    signal.signal(signal.SIGINT, lambda s, f: os.kill(pid, signal.SIGINT))
    with open(log_path, "a", buffering=1) as log:
        while True:
            try:
                r, _, _ = select.select([notify], [], [], 0.05)
            except InterruptedError:
                continue
            if r:
                msg = notify.recv(4096).decode("utf-8", "replace")
                log.write(msg.replace("\n", " ") + "\n")
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
    # Anything sent just before the exit.
    notify.setblocking(False)
    with open(log_path, "a") as log:
        try:
            while True:
                log.write(notify.recv(4096).decode("utf-8", "replace").replace("\n", " ") + "\n")
        except BlockingIOError:
            pass
    os.unlink(notify_path)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
