"""Verifies webhook deliveries recorded by Porch's tests with the `standardwebhooks` package
(an implementation independent of Porch's), as a receiver would.

Reads JSON from standard input: {"secret": "whsec_...", "deliveries": [{"headers": {...},
"body": "..."}]}. Prints one line per delivery and exits 1 if any signature does not verify.
The Rust test server/tests/api/webhooks.rs runs it with tests/deliveries/.venv/bin/python.
"""

import json
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> int:
    job = json.load(sys.stdin)
    receiver = Webhook(job["secret"])
    failures = 0
    for delivery in job["deliveries"]:
        headers = delivery["headers"]
        try:
            payload = receiver.verify(delivery["body"], headers)
        except WebhookVerificationError as error:
            failures += 1
            print(f"FAIL {headers.get('webhook-id')}: {error}")
            continue
        print(f"OK {headers['webhook-id']} {payload['type']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
