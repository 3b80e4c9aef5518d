"""A real SMTP server for Porch's email tests (aiosmtpd): listens on 127.0.0.1 at a free port,
prints the port, and writes every message it receives to DIR/<n>.eml (the raw message, as
sent) and DIR/<n>.json (envelope, headers, and the decoded text and HTML parts, parsed by
Python's email package so the Rust test need not decode MIME). Refuses the recipient
refused@… (550). With SMTP_SINK_TEMPFAIL=N in the environment, the first N messages are
answered 451 (a temporary failure, as a busy or greylisting server answers) and not stored.
Runs until killed.

Usage: smtp_sink.py DIR
"""

import asyncio
import email
import email.policy
import json
import os
import socket
import sys

from aiosmtpd.controller import Controller


class Sink:
    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.count = 0
        self.tempfail = int(os.environ.get("SMTP_SINK_TEMPFAIL", "0"))

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # noqa: N802
        # A mailbox named "refused" is refused, as a server refuses an unknown user.
        if address.split("@")[0].lower() == "refused":
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        if self.tempfail > 0:
            self.tempfail -= 1
            return "451 4.3.0 try again later"
        self.count += 1
        path = os.path.join(self.directory, f"{self.count:04}.eml")
        raw = envelope.original_content or envelope.content
        with open(path, "wb") as f:
            f.write(raw)
        message = email.message_from_bytes(raw, policy=email.policy.default)
        parts = {}
        for kind in ("plain", "html"):
            part = message.get_body(preferencelist=(kind,))
            parts[kind] = part.get_content() if part is not None else None
        summary = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "headers": {k.lower(): str(v) for k, v in message.items()},
            "content_type": message.get_content_type(),
            "text": parts["plain"],
            "html": parts["html"],
        }
        json_path = path[: -len(".eml")] + ".json"
        with open(json_path + ".tmp", "w") as f:
            json.dump(summary, f)
        os.replace(json_path + ".tmp", json_path)
        return "250 OK stored"


def free_port() -> int:
    # aiosmtpd connects to itself at start-up, so it needs a real port, not 0.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    port = free_port()
    controller = Controller(Sink(sys.argv[1]), hostname="127.0.0.1", port=port)
    controller.start()
    print(port, flush=True)
    try:
        asyncio.get_event_loop().run_until_complete(asyncio.Event().wait())
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
