"""Failure reasons as real services word them, for the error folding tests.

Each kind is one failure as the on-call engineer sees it (one template,
fixed words), and its generator varies every part that differs per job the
way the service that writes it does: Stripe's base62 ids after their
prefixes, ULIDs and KSUIDs built from a timestamp and random bytes, Mongo
ObjectIds, S3 request ids and host ids, IPv6 addresses compressed as Node
prints them, Go durations that change unit with their size, and so on. The
formats come from the services' documentation and from messages quoted in
public issue trackers; the generators are ours.

``samples(kind, count)`` is seeded by the kind's name, so a run is
repeatable and a failure names the sample that broke.
"""

from __future__ import annotations

import base64
import datetime as dt
import random
import string
from collections.abc import Callable

Generator = Callable[[random.Random], str]

BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase
HEX = "0123456789abcdef"
CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# An hour of 2024-2025, as the ids' and dates' timestamps.
_EPOCH_LOW = int(dt.datetime(2024, 1, 1, tzinfo=dt.UTC).timestamp())
_EPOCH_HIGH = int(dt.datetime(2025, 12, 31, tzinfo=dt.UTC).timestamp())
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
_DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
_FIRST = ["jane", "john", "maria", "wei", "olu", "anna", "lukas", "priya", "sam", "noor"]
_LAST = ["doe", "smith", "garcia", "chen", "adeyemi", "novak", "müller", "patel", "o-brien"]
_DOMAINS = ["example.com", "mail.example.org", "corp.example.co.uk", "example.io"]
_HOSTS = ["api.example.com", "payments.internal", "orders-api.prod.example.net"]


# -- the varying parts ----------------------------------------------------------


def pick(r: random.Random, alphabet: str, n: int) -> str:
    return "".join(r.choice(alphabet) for _ in range(n))


def hex_id(r: random.Random, n: int) -> str:
    return pick(r, HEX, n)


def base62(r: random.Random, n: int) -> str:
    return pick(r, BASE62, n)


def stripe_id(r: random.Random, prefix: str, n: int = 14) -> str:
    """Stripe's ids: a prefix, then base62 (14 characters for customers and
    requests, 24 for payment intents and charges, which start with a digit
    that says the shard, e.g. pi_3MtwBwLkdIwHu7ix28a3tqPa)."""
    if n >= 24:
        return f"{prefix}_{r.choice('123')}{base62(r, n - 1)}"
    return f"{prefix}_{base62(r, n)}"


def _timestamp(r: random.Random) -> int:
    return r.randint(_EPOCH_LOW, _EPOCH_HIGH)


def ulid(r: random.Random) -> str:
    """48 bits of milliseconds, 80 random bits, Crockford base32 (26 chars)."""
    value = (_timestamp(r) * 1000 + r.randint(0, 999)) << 80 | r.getrandbits(80)
    return "".join(CROCKFORD[(value >> (5 * i)) & 31] for i in reversed(range(26)))


def typeid(r: random.Random, prefix: str) -> str:
    """A TypeID: a lowercase prefix, "_", a ULID in lowercase."""
    return f"{prefix}_{ulid(r).lower()}"


def ksuid(r: random.Random) -> str:
    """Segment's KSUID: 4 bytes of seconds since 2014-05-13, 16 random bytes,
    base62 padded to 27 characters."""
    value = (_timestamp(r) - 1_400_000_000) << 128 | r.getrandbits(128)
    digits = []
    while value:
        value, rest = divmod(value, 62)
        digits.append(BASE62[rest])
    return "".join(reversed(digits)).rjust(27, "0")


def object_id(r: random.Random) -> str:
    """A Mongo ObjectId: 4 bytes of seconds, 5 random bytes, a 3-byte counter."""
    return f"{_timestamp(r):08x}{r.getrandbits(40):010x}{r.getrandbits(24):06x}"


def uuid4(r: random.Random, *, upper: bool = False) -> str:
    value = f"{r.getrandbits(128):032x}"
    value = value[:12] + "4" + value[13:16] + r.choice("89ab") + value[17:]
    text = f"{value[:8]}-{value[8:12]}-{value[12:16]}-{value[16:20]}-{value[20:]}"
    return text.upper() if upper else text


def s3_request_id(r: random.Random) -> str:
    """x-amz-request-id: 16 upper-case letters and digits (7BMJM8PWV1J1FNEH)."""
    return pick(r, string.ascii_uppercase + string.digits, 16)


def s3_host_id(r: random.Random) -> str:
    """x-amz-id-2: standard base64 of 48 or 57 bytes."""
    return base64.b64encode(r.randbytes(r.choice((48, 57)))).decode()


def aws_account(r: random.Random) -> str:
    return f"{r.randint(10**11, 10**12 - 1)}"


def ipv4(r: random.Random) -> str:
    first = r.choice([10, 172, 192, 52, 34, 3])
    return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


def ipv6(r: random.Random) -> str:
    """An IPv6 address as Node prints it: lower-case, leading zeros dropped,
    the longest run of zero groups compressed to "::"."""
    groups = [r.choice([0, r.getrandbits(16)]) if i >= 3 else r.getrandbits(16) for i in range(8)]
    groups[0] = r.choice([0x2600, 0x2A05, 0x2001, 0xFD00]) | r.getrandbits(8)
    run_start, run_len, best_start, best_len = 0, 0, -1, 0
    for i, group in enumerate(groups):
        if group == 0:
            run_start, run_len = (run_start, run_len + 1) if run_len else (i, 1)
            if run_len > best_len:
                best_start, best_len = run_start, run_len
        else:
            run_len = 0
    words = [f"{group:x}" for group in groups]
    if best_len >= 2:
        head = ":".join(words[:best_start])
        tail = ":".join(words[best_start + best_len :])
        return f"{head}::{tail}"
    return ":".join(words)


def email(r: random.Random) -> str:
    local = f"{r.choice(_FIRST)}.{r.choice(_LAST)}"
    local += r.choice(["", str(r.randint(1, 99)), f"+{r.choice(['orders', 'test', 'x'])}"])
    return f"{local}@{r.choice(_DOMAINS)}"


def moment(r: random.Random) -> dt.datetime:
    return dt.datetime.fromtimestamp(_timestamp(r), tz=dt.UTC).replace(
        microsecond=r.randint(0, 999) * 1000
    )


def iso_time(r: random.Random) -> str:
    """JavaScript's toISOString(): 2024-05-17T10:42:13.123Z."""
    return moment(r).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def http_date(r: random.Random) -> str:
    """RFC 7231's IMF-fixdate: Fri, 17 May 2024 10:42:13 GMT."""
    at = moment(r)
    return f"{_DAYS[at.weekday()]}, {at:%d} {_MONTHS[at.month - 1]} {at:%Y %H:%M:%S} GMT"


def js_date(r: random.Random) -> str:
    """Date.prototype.toString() on a server in California."""
    at = moment(r) - dt.timedelta(hours=7)
    return (
        f"{_DAYS[at.weekday()]} {_MONTHS[at.month - 1]} {at:%d %Y %H:%M:%S} GMT-0700"
        " (Pacific Daylight Time)"
    )


def us_time(r: random.Random) -> str:
    """toLocaleString('en-US'): 5/17/2024, 10:42:13 AM."""
    at = moment(r)
    hour = at.hour % 12 or 12
    return f"{at.month}/{at.day}/{at.year}, {hour}:{at:%M:%S} {'AM' if at.hour < 12 else 'PM'}"


def amz_date(r: random.Random, shift_s: int = 0) -> str:
    """SigV4's x-amz-date: 20240517T104213Z."""
    return f"{moment(r) + dt.timedelta(seconds=shift_s):%Y%m%dT%H%M%SZ}"


def go_duration(r: random.Random) -> str:
    """Go's time.Duration.String(): 950ms, 2.5s, 1m30.2s, 1h0m5s."""
    ms = r.choice([r.randint(1, 999), r.randint(1_000, 59_999), r.randint(60_000, 7_200_000)])
    if ms < 1000:
        return f"{ms}ms"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest / 1000:.3f}".rstrip("0").rstrip(".")
    if hours:
        return f"{hours}h{minutes}m{seconds}s"
    if minutes:
        return f"{minutes}m{seconds}s"
    return f"{seconds}s"


def short_duration(r: random.Random) -> str:
    """pretty-ms and friends: 250ms under a second, 2.5s above it."""
    ms = r.randint(5, 45_000)
    return f"{ms}ms" if ms < 1000 else f"{ms / 1000:.1f}s"


def order_ref(r: random.Random) -> str:
    """An id as a service of ours might mint it: prefix and 10 hex digits."""
    return f"ord_{hex_id(r, 10)}"


# -- the kinds -------------------------------------------------------------------


def _stripe_no_such(r: random.Random) -> str:
    # stripe-java's message: the quoted id, the code, the request id.
    return (
        f"No such payment_intent: '{stripe_id(r, 'pi', 24)}'; code: resource_missing;"
        f" request-id: {stripe_id(r, 'req')}"
    )


def _stripe_declined(r: random.Random) -> str:
    return (
        f"charge {stripe_id(r, 'ch', 24)} for customer {stripe_id(r, 'cus')} failed:"
        " Your card has insufficient funds."
    )


def _stripe_idempotency(r: random.Random) -> str:
    return (
        "Keys for idempotent requests can only be used with the same parameters they were"
        f" first used with. Try using a key other than '{uuid4(r)}' if you meant to execute"
        " a different request."
    )


def _gateway_timeout(r: random.Random) -> str:
    # The incident of issue 21, word for word.
    return f"gateway timeout after {r.randint(30_000, 31_000)} ms (order {order_ref(r)})"


def _typeid_missing(r: random.Random) -> str:
    return f"account {typeid(r, 'user')} has no billing address on file"


def _ulid_lease(r: random.Random) -> str:
    return f"lease on job {ulid(r)} expired after {r.randint(1, 9)} renewals"


def _ksuid_publish(r: random.Random) -> str:
    return f"event {ksuid(r)} could not be published: broker unavailable"


def _openai_rate_limit(r: random.Random) -> str:
    used = r.randint(25_000, 30_000)
    return (
        f"Rate limit reached for gpt-4o in organization org-{base62(r, 24)} on tokens per min"
        f" (TPM): Limit 30000, Used {used}, Requested {r.randint(200, 4000)}. Please try"
        f" again in {r.randint(1, 9999) / 1000}s."
    )


def _object_id_missing(r: random.Random) -> str:
    return f"Order {object_id(r)} not found in shop.orders"


def _mongo_duplicate(r: random.Random) -> str:
    return (
        "E11000 duplicate key error collection: shop.orders index: _id_ dup key:"
        f" {{ _id: ObjectId('{object_id(r)}') }}"
    )


def _mongo_timeout(r: random.Random) -> str:
    return (
        f"connection {r.randint(1, 400)} to {ipv4(r)}:27017 timed out"
        f" after {r.randint(1, 30)} retries"
    )


def _s3_access_denied(r: random.Random) -> str:
    # The AWS SDK for Java's form: the request id and the host id in line.
    return (
        "Access Denied (Service: Amazon S3; Status Code: 403; Error Code: AccessDenied;"
        f" Request ID: {s3_request_id(r)}; S3 Extended Request ID: {s3_host_id(r)};"
        " Proxy: null)"
    )


def _sts_not_authorized(r: random.Random) -> str:
    account = aws_account(r)
    return (
        f"User: arn:aws:sts::{account}:assumed-role/order-worker/botocore-session-"
        f"{r.randint(1_700_000_000, 1_760_000_000)} is not authorized to perform:"
        f" sqs:SendMessage on resource: arn:aws:sqs:{r.choice(['us-east-1', 'eu-west-1'])}:"
        f"{account}:orders-{r.choice(['eu', 'us', 'apac'])} because no identity-based policy"
        " allows the sqs:SendMessage action"
    )


def _lambda_timeout(r: random.Random) -> str:
    seconds = f"{r.randint(3, 900)}.{r.randint(0, 99):02d}"
    return f"{iso_time(r)} {uuid4(r)} Task timed out after {seconds} seconds"


def _sigv4_expired(r: random.Random) -> str:
    shift = r.randint(301, 5000)
    return (
        f"Signature expired: {amz_date(r)} is now earlier than {amz_date(r, shift)}"
        f" ({amz_date(r, shift + 300)} - 5 min.)"
    )


def _dynamo_throughput(r: random.Random) -> str:
    return (
        "An error occurred (ProvisionedThroughputExceededException) when calling the PutItem"
        f" operation (reached max retries: {r.randint(2, 9)}): The level of configured"
        " provisioned throughput for the table was exceeded."
    )


def _s3_key_missing(r: random.Random) -> str:
    at = moment(r)
    key = f"exports/{at:%Y/%m/%d}/{uuid4(r)}.csv.gz"
    return f"NoSuchKey: The specified key does not exist. Key: {key}"


def _s3_key_upload(r: random.Random) -> str:
    key = f"invoices/{stripe_id(r, 'cus')}/{moment(r):%Y-%m}/in_{base62(r, 24)}.pdf"
    return f"upload to s3://billing-exports/{key} failed: RequestTimeout"


def _ipv4_refused(r: random.Random) -> str:
    return f"connect ECONNREFUSED {ipv4(r)}:{r.choice([5432, 6379, 3306, 8080])}"


def _ipv6_timeout(r: random.Random) -> str:
    return f"connect ETIMEDOUT {ipv6(r)}:{r.choice([443, 5432])}"


def _ipv6_bracketed(r: random.Random) -> str:
    return f"upstream [{ipv6(r)}]:{r.choice([80, 8443])} reset the connection"


def _url_with_ids(r: random.Random) -> str:
    return (
        f"GET https://{r.choice(_HOSTS)}/v2/orders/{order_ref(r)}/items?cursor={base62(r, 16)}"
        f" responded 502 after {r.randint(100, 30_000)} ms"
    )


def _path_with_ids(r: random.Random) -> str:
    return (
        f"cannot stat /mnt/data/tenants/{hex_id(r, 12)}/exports/{moment(r):%Y-%m-%d}.csv:"
        " No such file or directory"
    )


def _smtp_rejected(r: random.Random) -> str:
    return (
        f"550 5.1.1 <{email(r)}>: Recipient address rejected: User unknown in virtual mailbox table"
    )


def _email_taken(r: random.Random) -> str:
    return f"a user with email {email(r)} already exists"


def _go_deadline(r: random.Random) -> str:
    return f"lock acquisition for tenant {r.randint(1, 99_999)} timed out after {go_duration(r)}"


def _render_budget(r: random.Random) -> str:
    return f"thumbnail render took {short_duration(r)}, over its budget of 500ms"


def _iso_expired(r: random.Random) -> str:
    return f"subscription {stripe_id(r, 'sub')} ended at {iso_time(r)}"


def _retry_after(r: random.Random) -> str:
    return f"rate limited by the carrier API until {http_date(r)}"


def _js_date(r: random.Random) -> str:
    return f"booking window closed at {js_date(r)}"


def _us_date(r: random.Random) -> str:
    return f"shift ended at {us_time(r)} before the delivery was confirmed"


def _pg_duplicate(r: random.Random) -> str:
    # psycopg2's str(): the message, then DETAIL on its own line.
    return (
        'duplicate key value violates unique constraint "orders_external_id_key"\n'
        f"DETAIL:  Key (external_id)=({order_ref(r)}) already exists."
    )


def _pg_invalid_uuid(r: random.Random) -> str:
    return f'invalid input syntax for type uuid: "{order_ref(r)}"'


def _pg_deadlock(r: random.Random) -> str:
    return (
        "deadlock detected\n"
        f"DETAIL:  Process {r.randint(1000, 99999)} waits for ShareLock on transaction"
        f" {r.randint(10**6, 10**8)}; blocked by process {r.randint(1000, 99999)}."
    )


def _pg_connection(r: random.Random) -> str:
    return (
        f'connection to server at "db-{r.randint(1, 3)}.internal" ({ipv4(r)}), port 5432'
        " failed: Connection refused"
    )


def _mysql_lock_wait(r: random.Random) -> str:
    return "ER_LOCK_WAIT_TIMEOUT: Lock wait timeout exceeded; try restarting transaction"


def _mysql_duplicate(r: random.Random) -> str:
    return f"ER_DUP_ENTRY: Duplicate entry '{email(r)}' for key 'users.email'"


def _pymysql_gone(r: random.Random) -> str:
    # pymysql's errors print as the tuple of their code and message.
    return "(2013, 'Lost connection to MySQL server during query (timed out)')"


def _pymysql_duplicate(r: random.Random) -> str:
    return f"(1062, \"Duplicate entry '{email(r)}' for key 'users.email'\")"


def _redis_moved(r: random.Random) -> str:
    return f"MOVED {r.randint(0, 16383)} {ipv4(r)}:{r.choice([6379, 6380, 6381])}"


def _redis_py_refused(r: random.Random) -> str:
    return (
        f"Error 111 connecting to redis-{r.randint(0, 5)}.cache.internal:6379. Connection refused."
    )


def _ioredis_retries(r: random.Random) -> str:
    return (
        "Reached the max retries per request limit (which is 20). Refer to"
        ' "maxRetriesPerRequest" option for details.'
    )


def _redis_oom(r: random.Random) -> str:
    return "OOM command not allowed when used memory > 'maxmemory'."


def _node_undefined(r: random.Random) -> str:
    prop = r.choice(["id", "total", "lineItems", "address", "customer_id"])
    return f"TypeError: Cannot read properties of undefined (reading '{prop}')"


def _node_json(r: random.Random) -> str:
    snippet = r.choice(["<!DOCTYPE ", "<html>\\n<h", "Too many r", "upstream c"])
    return f"SyntaxError: Unexpected token '{snippet[0]}', \"{snippet}\"... is not valid JSON"


def _node_enoent(r: random.Random) -> str:
    return f"ENOENT: no such file or directory, open '/tmp/upload-{uuid4(r)}.part'"


def _python_json(r: random.Random) -> str:
    column = r.randint(1, 4000)
    return f"Expecting ',' delimiter: line 1 column {column} (char {column - 1})"


def _python_unicode(r: random.Random) -> str:
    return (
        f"'utf-8' codec can't decode byte 0x{r.randint(0x80, 0xFF):x} in position"
        f" {r.randint(0, 90_000)}: invalid start byte"
    )


def _python_reset(r: random.Random) -> str:
    return "ConnectionResetError: [Errno 104] Connection reset by peer"


def _axios_status(r: random.Random) -> str:
    return f"Request failed with status code {r.choice([500, 502, 503, 504])}"


def _axios_timeout(r: random.Random) -> str:
    return f"timeout of {r.choice([5000, 10000, 30000, 60000])}ms exceeded"


def _undici_connect(r: random.Random) -> str:
    return (
        f"Connect Timeout Error (attempted addresses: {ipv4(r)}:443, {ipv6(r)}:443,"
        f" timeout: {r.choice([10000, 30000])}ms)"
    )


def _node_fetch(r: random.Random) -> str:
    return (
        f"request to https://{r.choice(_HOSTS)}/v1/customers/{stripe_id(r, 'cus')} failed,"
        f" reason: connect ETIMEDOUT {ipv4(r)}:443"
    )


def _requests_retries(r: random.Random) -> str:
    return (
        f"HTTPSConnectionPool(host='{r.choice(_HOSTS)}', port=443): Max retries exceeded with"
        f" url: /v1/orders/{order_ref(r)}?expand=items (Caused by NewConnectionError("
        f"'<urllib3.connection.HTTPSConnection object at 0x7f{hex_id(r, 10)}>: Failed to"
        " establish a new connection: [Errno 111] Connection refused'))"
    )


def _requests_status(r: random.Random) -> str:
    return (
        f"404 Client Error: Not Found for url: https://{r.choice(_HOSTS)}/v1/invoices/"
        f"{stripe_id(r, 'in', 24)}"
    )


def _httpx_status(r: random.Random) -> str:
    status = r.choice(["503 Service Unavailable", "502 Bad Gateway"])
    return (
        f"Server error '{status}' for url 'https://{r.choice(_HOSTS)}/v1/orders/"
        f"{order_ref(r)}'\nFor more information check: https://developer.mozilla.org/"
        f"en-US/docs/Web/HTTP/Status/{status[:3]}"
    )


def _httpx_read_timeout(r: random.Random) -> str:
    return f"ReadTimeout: The read operation timed out (job {uuid4(r, upper=True)})"


def _grpc_unavailable(r: random.Random) -> str:
    return (
        "14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED"
        f" {ipv4(r)}:50051 ({iso_time(r)})"
    )


def _bullmq_lock(r: random.Random) -> str:
    return f"Missing lock for job {r.randint(1, 10**7)}. moveToFinished"


def _base64_signature(r: random.Random) -> str:
    digest = base64.b64encode(r.randbytes(32)).decode()
    return f"webhook signature mismatch: expected sha256={digest}"


def _image_digest(r: random.Random) -> str:
    return (
        f"manifest for registry.example.com/worker@sha256:{hex_id(r, 64)} not found:"
        " manifest unknown"
    )


KINDS: dict[str, Generator] = {
    "stripe no such payment intent": _stripe_no_such,
    "stripe charge declined": _stripe_declined,
    "stripe idempotency key reused": _stripe_idempotency,
    "gateway timeout with an order id": _gateway_timeout,
    "TypeID of a user": _typeid_missing,
    "ULID of a job": _ulid_lease,
    "KSUID of an event": _ksuid_publish,
    "OpenAI rate limit": _openai_rate_limit,
    "Mongo ObjectId": _object_id_missing,
    "Mongo duplicate key": _mongo_duplicate,
    "Mongo connection timeout": _mongo_timeout,
    "S3 access denied with request ids": _s3_access_denied,
    "STS not authorized (ARNs)": _sts_not_authorized,
    "Lambda task timed out": _lambda_timeout,
    "SigV4 signature expired": _sigv4_expired,
    "DynamoDB throughput": _dynamo_throughput,
    "S3 key missing": _s3_key_missing,
    "S3 upload of a key": _s3_key_upload,
    "IPv4 refused": _ipv4_refused,
    "IPv6 timed out": _ipv6_timeout,
    "IPv6 in brackets": _ipv6_bracketed,
    "URL with ids": _url_with_ids,
    "path with ids": _path_with_ids,
    "SMTP recipient rejected": _smtp_rejected,
    "email already taken": _email_taken,
    "Go duration": _go_deadline,
    "ms or s duration": _render_budget,
    "ISO time": _iso_expired,
    "HTTP date": _retry_after,
    "JavaScript date": _js_date,
    "US date and time": _us_date,
    "Postgres duplicate key": _pg_duplicate,
    "Postgres invalid uuid": _pg_invalid_uuid,
    "Postgres deadlock": _pg_deadlock,
    "Postgres connection refused": _pg_connection,
    "MySQL lock wait": _mysql_lock_wait,
    "MySQL duplicate entry": _mysql_duplicate,
    "pymysql lost connection": _pymysql_gone,
    "pymysql duplicate entry": _pymysql_duplicate,
    "Redis MOVED": _redis_moved,
    "redis-py connection refused": _redis_py_refused,
    "ioredis max retries": _ioredis_retries,
    "Redis OOM": _redis_oom,
    "Node undefined property": _node_undefined,
    "Node invalid JSON": _node_json,
    "Node ENOENT": _node_enoent,
    "Python JSON delimiter": _python_json,
    "Python unicode decode": _python_unicode,
    "Python connection reset": _python_reset,
    "axios status": _axios_status,
    "axios timeout": _axios_timeout,
    "undici connect timeout": _undici_connect,
    "node-fetch timeout": _node_fetch,
    "requests max retries": _requests_retries,
    "requests 404": _requests_status,
    "httpx server error": _httpx_status,
    "httpx read timeout": _httpx_read_timeout,
    "gRPC unavailable": _grpc_unavailable,
    "BullMQ missing lock": _bullmq_lock,
    "base64 digest": _base64_signature,
    "image digest": _image_digest,
}


def samples(kind: str, count: int) -> list[str]:
    """``count`` reasons of ``kind``, the same ones on every run."""
    r = random.Random(f"failure-corpus:{kind}")
    return [KINDS[kind](r) for _ in range(count)]
