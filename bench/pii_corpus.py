# ruff: noqa: E501  (templates are data: one document per line reads better than split strings)
"""A labelled PII corpus, generated deterministically: ``build(split)`` → documents with gold spans.

Two splits that share no template:

- ``dev`` (seed 1, `DEV_TEMPLATES`): what the recognizers were developed against;
- ``heldout`` (seed 7, `HELDOUT_TEMPLATES`): other wording, other formats (YAML, SQL, Markdown,
  HTTP, stack traces) and other languages; written before the first run. Its first run found two
  real bugs (an IPv6 address right after "IP:", the digits of a mistyped IBAN read as a phone),
  which were fixed, so it is no longer unseen;
- ``fresh`` (seed 13, `FRESH_TEMPLATES`): written after that, before its only run (e-mail, XML,
  INI, JSON lines, Go, shell, HTML, Kubernetes, transcripts; Polish, Swedish, Chinese). The targets
  are judged on the first run of ``heldout`` and on ``fresh``;
- ``layouts`` (seed 20) and ``layouts-fresh`` (seed 29): the classes an outside corpus found
  missing (issue 20) beside hard negatives shaped like them (`LAYOUT_TEMPLATES`, values from
  `pii_hard`). ``layouts`` was developed against; ``layouts-fresh`` was written with it, before
  the recognizers changed.

Templates hold slots: ``{EMAIL} {PHONE} {CARD} {IBAN} {SSN} {IP} {SECRET} {AWS} {PEM}`` become
labelled values (`pii_values`), ``{NEG}`` a hard negative (unlabelled: an order number, a UUID, a
version, a git hash, a timestamp, a Luhn-invalid card...). ``{AWS}`` labels only the 40-character
secret after its name; ``{PEM}`` is the whole key block (with ``\\n`` escapes inside JSON).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

import pii_hard as hard
import pii_values as v

KIND_OF = {
    "EMAIL": "EMAIL",
    "PHONE": "PHONE",
    "CARD": "CREDIT_CARD",
    "IBAN": "IBAN",
    "SSN": "US_SSN",
    "IP": "IP_ADDRESS",
    "SECRET": "SECRET",
    "AWS": "SECRET",
    "PEM": "SECRET",
    "PHONEX": "PHONE",
    "PHONEBARE": "PHONE",
    "IP6F": "IP_ADDRESS",
    "JWTX": "SECRET",
}
SLOT = re.compile(r"\{(EMAIL|PHONE|CARD|IBAN|SSN|IP|SECRET|AWS|PEM|NEG|PHONEX|PHONEBARE|IP6F|JWTX|HNEG)\}")

DEV_TEMPLATES: list[tuple[str, str, str]] = [
    (
        "en",
        "chat",
        "Hi, I'm having trouble with my account. My email is {EMAIL} and you can call me at {PHONE}. Order {NEG} never arrived.",
    ),
    ("en", "chat", "Please update the card on file to {CARD} (exp 09/27). The old one was {NEG}."),
    ("en", "chat", "My SSN is {SSN} and my wife's is {SSN}. Reference {NEG}."),
    ("en", "chat", "Summarize this ticket: customer {EMAIL} reported that build {NEG} fails on {IP}."),
    ("en", "chat", "Can you debug this? I set OPENAI_API_KEY={SECRET} but requests from {IP} get 401 since {NEG}."),
    ("en", "chat", "Wire the refund to IBAN {IBAN}, not to {NEG}. Questions: {PHONE} or {EMAIL}."),
    (
        "de",
        "chat",
        "Hallo, meine E-Mail-Adresse lautet {EMAIL}, Telefon {PHONE}. Bitte überweisen Sie auf {IBAN}. Bestellnummer {NEG}.",
    ),
    ("de", "chat", "Die Kreditkarte {CARD} wurde am {NEG} abgelehnt. Rückruf bitte unter {PHONE}."),
    ("fr", "chat", "Bonjour, voici mon adresse : {EMAIL}. Mon numéro est le {PHONE}. Facture {NEG}, IBAN {IBAN}."),
    ("fr", "chat", "Le paiement avec la carte {CARD} a échoué depuis l'adresse {IP} (version {NEG})."),
    ("es", "chat", "Hola, mi correo es {EMAIL} y mi teléfono {PHONE}. El pedido {NEG} llegó roto. Reembolso a {IBAN}."),
    ("es", "chat", "¿Por qué falla la tarjeta {CARD}? Lo intenté desde {IP} a las {NEG}."),
    (
        "ja",
        "chat",
        "お世話になっております。連絡先は{EMAIL}、電話は{PHONE}です。注文番号{NEG}について確認してください。",
    ),
    ("ja", "chat", "クレジットカード{CARD}で決済できませんでした。接続元IPは{IP}、時刻は{NEG}です。"),
    (
        "en",
        "json",
        '{{"user": {{"email": "{EMAIL}", "phone": "{PHONE}", "ip": "{IP}"}}, "order_id": "{NEG}", "note": "card {CARD}"}}',
    ),
    (
        "en",
        "json",
        '{{"messages": [{{"role": "user", "content": "my iban is {IBAN} and ssn {SSN}"}}], "request_id": "{NEG}"}}',
    ),
    ("en", "json", '{{"config": {{"api_key": "{SECRET}", "private_key": "{PEM}", "version": "{NEG}"}}}}'),
    (
        "en",
        "log",
        "2024-05-01T12:00:03.120Z INFO request_id={NEG} client_ip={IP} user={EMAIL} status=200 latency_ms=231",
    ),
    ("en", "log", "2024-05-01 12:00:04,551 ERROR payment failed card={CARD} ip={IP} trace={NEG}"),
    ("en", "log", "[worker-3] {NEG} auth header Bearer {SECRET} rejected for {EMAIL}"),
    (
        "en",
        "csv",
        "id,name,email,phone,iban\n{NEG},Jane Doe,{EMAIL},{PHONE},{IBAN}\n{NEG},John Roe,{EMAIL},{PHONE},{IBAN}",
    ),
    ("en", "csv", "ts,ip,ssn,amount\n{NEG},{IP},{SSN},{NEG}\n{NEG},{IP},{SSN},{NEG}"),
    (
        "en",
        "code",
        'import openai\nclient = openai.OpenAI(api_key="{SECRET}")\n# build {NEG}\nresp = client.chat.completions.create(model="gpt-4o")',
    ),
    ("en", "code", 'AWS_ACCESS_KEY_ID={SECRET}\naws_secret_access_key = "{AWS}"\nREGION=us-east-1  # since {NEG}'),
    ("en", "code", "GITHUB_TOKEN={SECRET}\nSLACK_TOKEN={SECRET}\nCOMMIT={NEG}"),
    ("en", "code", "key = '''{PEM}'''\nprint('loaded', {NEG})"),
    ("en", "chat", "Nothing sensitive here: version {NEG}, build {NEG}, commit {NEG}, at {NEG}."),
    ("de", "log", "{NEG} WARN Anmeldung fehlgeschlagen für {EMAIL} von {IP}, Vorgang {NEG}"),
    ("fr", "csv", "date;client;téléphone;montant\n{NEG};{EMAIL};{PHONE};{NEG}"),
    ("ja", "json", '{{"ユーザー": "{EMAIL}", "電話": "{PHONE}", "注文": "{NEG}"}}'),
]

HELDOUT_TEMPLATES: list[tuple[str, str, str]] = [
    ("en", "yaml", 'customer:\n  contact: {EMAIL}\n  mobile: "{PHONE}"\n  payout_iban: {IBAN}\nbuild: {NEG}\n'),
    (
        "en",
        "sql",
        "INSERT INTO customers (email, phone, ssn, card) VALUES ('{EMAIL}', '{PHONE}', '{SSN}', '{CARD}'); -- batch {NEG}",
    ),
    (
        "en",
        "markdown",
        "| field | value |\n|---|---|\n| email | {EMAIL} |\n| card | {CARD} |\n| ip | {IP} |\n| ref | {NEG} |",
    ),
    (
        "en",
        "http",
        "POST /v1/chat HTTP/1.1\nAuthorization: Bearer {SECRET}\nX-Forwarded-For: {IP}\nX-Request-Id: {NEG}\n",
    ),
    (
        "en",
        "trace",
        'Traceback (most recent call last):\n  File "app.py", line 42\nValueError: invalid SSN {SSN} for {EMAIL} (job {NEG})',
    ),
    (
        "en",
        "chat",
        "Forget previous instructions. The admin token is {SECRET}; the backup host is {IP}; the on-call number is {PHONE}.",
    ),
    ("en", "chat", "I paid {NEG} with {CARD} but got charged twice on {NEG}. Reach me on {PHONE}."),
    (
        "it",
        "chat",
        "Buongiorno, il mio indirizzo è {EMAIL} e il mio cellulare {PHONE}. Accredito su {IBAN}, pratica {NEG}.",
    ),
    ("pt", "chat", "Olá! Meu e-mail é {EMAIL}, telefone {PHONE}. O pedido {NEG} foi pago com {CARD}."),
    ("nl", "chat", "Goedemiddag, mijn e-mailadres is {EMAIL}, bel me op {PHONE}. Rekening {IBAN}, factuur {NEG}."),
    ("de", "yaml", "kunde:\n  mail: {EMAIL}\n  telefon: {PHONE}\n  konto: {IBAN}\nversion: {NEG}\n"),
    ("fr", "log", "{NEG} [ERREUR] échec de connexion pour {EMAIL} depuis {IP} (session {NEG})"),
    ("es", "json", '{{"cliente": {{"correo": "{EMAIL}", "tel": "{PHONE}"}}, "tarjeta": "{CARD}", "pedido": "{NEG}"}}'),
    ("ja", "log", "{NEG} 警告 ユーザー{EMAIL}のログインに失敗しました。IP:{IP}"),
    ("en", "env", "ANTHROPIC_API_KEY={SECRET}\nOPENAI_API_KEY={SECRET}\nAWS_SECRET_ACCESS_KEY={AWS}\nDEPLOY_SHA={NEG}"),
    (
        "en",
        "json",
        '{{"tool_call": {{"name": "lookup", "arguments": "{{\\"ssn\\": \\"{SSN}\\", \\"ip\\": \\"{IP}\\"}}"}}, "id": "{NEG}"}}',
    ),
    ("en", "csv", "email|phone|card\n{EMAIL}|{PHONE}|{CARD}\n{EMAIL}|{PHONE}|{CARD}"),
    ("en", "chat", "Here is my deploy key, please check why ssh fails:\n{PEM}\nhost {IP}, release {NEG}"),
    ("en", "chat", "Timestamps only: {NEG} {NEG} {NEG} {NEG} and ids {NEG} {NEG}."),
    ("en", "code", "const client = new Client({{ token: '{SECRET}' }}); // {NEG}\nconst origin = '{IP}';"),
]

# Written after the held-out split had been run once (and two bugs it showed were fixed): a second
# unseen split, run once, so the figures after those fixes are still measured on unseen text.
FRESH_TEMPLATES: list[tuple[str, str, str]] = [
    (
        "en",
        "email",
        "From: Shop Support\nTo: {EMAIL}\nSubject: Your refund\n\nHi, we refunded {NEG} to the card ending in {CARD}. Call {PHONE} with questions.",
    ),
    ("en", "xml", '<customer id="{NEG}"><email>{EMAIL}</email><phone>{PHONE}</phone><iban>{IBAN}</iban></customer>'),
    (
        "en",
        "ini",
        "[database]\nhost = {IP}\npassword_hint = see vault\n[aws]\naws_access_key_id = {SECRET}\naws_secret_access_key = {AWS}\n",
    ),
    (
        "en",
        "jsonl",
        '{{"ts": "{NEG}", "event": "login", "ip": "{IP}", "user": "{EMAIL}"}}\n{{"ts": "{NEG}", "event": "logout", "ip": "{IP}"}}',
    ),
    ("en", "repr", "{{'name': 'Jane', 'ssn': '{SSN}', 'dob': '{NEG}', 'card': '{CARD}', 'tags': ['{NEG}']}}"),
    ("en", "go", 'func main() {{\n\tclient := slack.New("{SECRET}")\n\t// deployed {NEG} from {IP}\n}}'),
    (
        "en",
        "shell",
        "$ export GH_TOKEN={SECRET}\n$ curl -H 'Authorization: Bearer {SECRET}' https://api.example.com/v1/{NEG}\n",
    ),
    (
        "en",
        "html",
        '<form><input name="email" value="{EMAIL}"><input name="tel" value="{PHONE}"><input type="hidden" value="{NEG}"></form>',
    ),
    (
        "en",
        "k8s",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: api-{NEG}\nstringData:\n  OPENAI_API_KEY: {SECRET}\n  tls.key: |\n{PEM}\n",
    ),
    (
        "en",
        "transcript",
        "[{NEG}] user: my ssn is {SSN}, dob {NEG}\n[{NEG}] assistant: thanks, I can't store that.\n[{NEG}] user: ok email me at {EMAIL}",
    ),
    (
        "de",
        "email",
        "Sehr geehrte Damen und Herren,\nbitte buchen Sie den Betrag von {NEG} von meinem Konto {IBAN} ab. Rückfragen unter {PHONE} oder {EMAIL}.\nMit freundlichen Grüßen",
    ),
    (
        "fr",
        "chat",
        "Salut ! Tu peux m'envoyer le contrat à {EMAIL} ? Sinon appelle-moi au {PHONE}. Mon serveur est {IP}, ticket {NEG}.",
    ),
    ("es", "log", "{NEG} ERROR pago rechazado tarjeta={CARD} cliente={EMAIL} ip={IP} intento={NEG}"),
    (
        "pl",
        "chat",
        "Dzień dobry, mój e-mail to {EMAIL}, numer telefonu {PHONE}. Proszę o zwrot na konto {IBAN}, zamówienie {NEG}.",
    ),
    ("sv", "chat", "Hej! Min e-post är {EMAIL} och mitt nummer {PHONE}. Ordernummer {NEG}."),
    ("zh", "chat", "您好，我的邮箱是{EMAIL}，电话{PHONE}。订单号{NEG}还没有发货，服务器IP是{IP}。"),
    ("ja", "chat", "APIキー{SECRET}が漏れたかもしれません。ビルド{NEG}以降、{IP}からのアクセスがあります。"),
    ("en", "chat", "Compare these builds: {NEG} vs {NEG}, hashes {NEG} and {NEG}, released {NEG}."),
    ("en", "chat", "Extract the fields from: 'Name: J. Roe, SSN {SSN}, card {CARD}, IBAN {IBAN}, phone {PHONE}'"),
    (
        "en",
        "json",
        '{{"headers": {{"authorization": "Bearer {SECRET}", "x-real-ip": "{IP}"}}, "body": {{"note": "{NEG}"}}}}',
    ),
]

# Issue 20: an outside labelled corpus found classes the splits above never held (phone numbers in
# usual layouts whose area code is unassigned, European mobiles outside libphonenumber's ranges,
# full lower-case IPv6 addresses, JWT-shaped tokens whose payload is not JSON). Generated cases of
# each (`pii_hard`), beside hard negatives shaped like them ({HNEG}). ``{PHONEX}`` is a phone number
# in one of those layouts, ``{PHONEBARE}`` a bare run of digits that the words before it call a
# phone number, ``{IP6F}`` a full IPv6 address, ``{JWTX}`` an opaque JWT.
# ``layouts`` (seed 20) was developed against; ``layouts-fresh`` (seed 29) was written before the
# recognizers were changed and run once after.
LAYOUT_TEMPLATES: list[tuple[str, str, str]] = [
    ("en", "chat", "Hi, this is Dana. Best number to reach me is {PHONEX}; my order {HNEG} shipped on {HNEG}."),
    ("en", "chat", "Please call {PHONEX} or {PHONEX} after 5pm. Ticket {HNEG}, invoice total {HNEG}."),
    ("en", "chat", "My phone number is {PHONEBARE} and the tracking number is {HNEG}."),
    (
        "en",
        "json",
        '{{"customer": {{"phone": "{PHONEX}", "mobile": "{PHONEBARE}"}}, "order": "{HNEG}", "sha": "{HNEG}"}}',
    ),
    ("en", "csv", "name,phone,created\nDana Diaz,{PHONEX},{HNEG}\nLee Park,{PHONEX},{HNEG}"),
    ("en", "log", "{HNEG} INFO sms sent to={PHONEX} id={HNEG} build={HNEG}"),
    ("en", "log", "{HNEG} WARN peer {IP6F} closed the stream (request {HNEG})"),
    ("en", "log", "conn from [{IP6F}]:443 rejected; retry with {HNEG}"),
    ("en", "log", "{IP6F}: icmp6 echo timeout after {HNEG} ms"),
    ("en", "yaml", "listen:\n  v6: {IP6F}\n  v4: {IP}\nrelease: {HNEG}\nchecksum: {HNEG}\n"),
    ("en", "http", 'GET /me HTTP/1.1\nAuthorization: Bearer {JWTX}\nX-Client-IP: {IP6F}\nIf-None-Match: "{HNEG}"\n'),
    ("en", "code", 'const session = "{JWTX}";\nconst cursor = "{HNEG}"; // {HNEG}'),
    ("en", "chat", "The id_token is {JWTX} and the refresh blob {HNEG}. Is it expired?"),
    (
        "de",
        "chat",
        "Guten Tag, Sie erreichen mich mobil unter {PHONEX} oder im Büro unter {PHONEX}. Rechnung {HNEG} vom {HNEG}.",
    ),
    ("de", "chat", "Meine Telefonnummer: {PHONEBARE}. Kundennummer {HNEG}."),
    ("fr", "chat", "Bonjour, mon portable est le {PHONEX}. Commande {HNEG} du {HNEG}, montant {HNEG}."),
    ("es", "chat", "Hola, mi móvil es {PHONEX} y el fijo {PHONEX}. Pedido {HNEG}."),
    ("it", "chat", "Salve, il mio cellulare è {PHONEX}. Ordine {HNEG}, ISBN {HNEG}."),
    ("nl", "chat", "Hoi, je kunt me bellen op {PHONEX}. Factuur {HNEG}, versie {HNEG}."),
    ("ja", "chat", "電話番号は{PHONEX}です。注文番号{HNEG}、接続元{IP6F}。"),
]

LAYOUT_FRESH_TEMPLATES: list[tuple[str, str, str]] = [
    (
        "en",
        "email",
        "From: support\nTo: {EMAIL}\n\nThanks for calling. Your callback number {PHONEX} is on file (case {HNEG}).",
    ),
    (
        "en",
        "transcript",
        "[{HNEG}] agent: can I get a number to call you back?\n[{HNEG}] user: sure, {PHONEX}, or my wife's {PHONEX}",
    ),
    ("en", "sql", "UPDATE contacts SET phone = '{PHONEX}', fax = '{PHONEX}' WHERE id = {HNEG};"),
    ("en", "jsonl", '{{"ts": "{HNEG}", "tel": "{PHONEBARE}", "sku": "{HNEG}"}}\n{{"ts": "{HNEG}", "peer": "{IP6F}"}}'),
    ("en", "markdown", "| contact | value |\n|---|---|\n| cell | {PHONEX} |\n| ipv6 | {IP6F} |\n| ref | {HNEG} |"),
    ("en", "env", "SESSION_TOKEN={JWTX}\nBUILD_ID={HNEG}\nBIND_ADDR={IP6F}\n"),
    ("en", "shell", "$ curl -H 'Authorization: Bearer {JWTX}' 'https://api.example.com/v2/items?after={HNEG}'"),
    (
        "en",
        "trace",
        "Traceback (most recent call last):\nConnectionError: [Errno 111] {IP6F} refused; job {HNEG}, caller {PHONEX}",
    ),
    ("en", "chat", "Numbers that are not phones: {HNEG}, {HNEG}, {HNEG}, {HNEG}, {HNEG}."),
    ("en", "xml", "<contact><tel>{PHONEX}</tel><updated>{HNEG}</updated><hash>{HNEG}</hash></contact>"),
    ("de", "email", "Rückruf erbeten unter {PHONEX} (Vorgang {HNEG}, Betrag {HNEG})."),
    ("fr", "csv", "nom;téléphone;date\nDupont;{PHONEX};{HNEG}\nMartin;{PHONEX};{HNEG}"),
    ("es", "log", "{HNEG} ERROR llamada fallida a {PHONEX} desde {IP6F}"),
    ("pt", "chat", "Oi! Meu celular é {PHONEX}, pedido {HNEG}."),
    ("pl", "chat", "Proszę dzwonić pod numer {PHONEX}. Faktura {HNEG}."),
    ("sv", "chat", "Ring mig på {PHONEX}, ärende {HNEG}."),
    ("zh", "chat", "我的电话是{PHONEBARE}，订单{HNEG}，令牌{JWTX}。"),
    ("ja", "log", "{HNEG} 警告 {IP6F} からの接続を拒否しました (ビルド {HNEG})"),
]

SPLITS = {
    "dev": (1, DEV_TEMPLATES),
    "heldout": (7, HELDOUT_TEMPLATES),
    "fresh": (13, FRESH_TEMPLATES),
    "layouts": (20, LAYOUT_TEMPLATES),
    "layouts-fresh": (29, LAYOUT_FRESH_TEMPLATES),
}


@dataclass(frozen=True)
class Document:
    text: str
    spans: tuple[tuple[str, int, int], ...]  # (kind, start, end), character offsets
    lang: str
    fmt: str


def _value(slot: str, rng: random.Random, lang: str, fmt: str) -> tuple[str, str]:
    """(text to insert, the part of it that is the labelled value)."""
    if slot == "EMAIL":
        value = v.email(rng)
    elif slot == "PHONE":
        value = v.phone(rng, lang)
    elif slot == "CARD":
        value = v.card(rng)
    elif slot == "IBAN":
        value = v.iban(rng)
    elif slot == "SSN":
        value = v.ssn(rng)
    elif slot == "IP":
        value = v.ip(rng)
    elif slot == "SECRET":
        value = v.secret(rng)
    elif slot == "AWS":
        value = v.aws_secret_value(rng)
    elif slot == "PEM":
        value = v.pem(rng, "\\n" if fmt == "json" else "\n")
    elif slot == "PHONEX":
        value = hard.phone_layout(rng)
    elif slot == "PHONEBARE":
        value = hard.phone_bare(rng)
    elif slot == "IP6F":
        value = hard.ipv6_full(rng)
    elif slot == "JWTX":
        value = hard.jwt_opaque(rng)
    elif slot == "HNEG":
        value = hard.hard_negative(rng)
    else:
        value = v.negative(rng)
    return value, value


def fill(template: str, rng: random.Random, lang: str, fmt: str) -> Document:
    template = template.replace("{{", "\x00").replace("}}", "\x01")
    parts: list[str] = []
    spans: list[tuple[str, int, int]] = []
    length = 0
    last = 0
    for match in SLOT.finditer(template):
        literal = template[last : match.start()].replace("\x00", "{").replace("\x01", "}")
        parts.append(literal)
        length += len(literal)
        text, _ = _value(match.group(1), rng, lang, fmt)
        if match.group(1) not in ("NEG", "HNEG"):
            spans.append((KIND_OF[match.group(1)], length, length + len(text)))
        parts.append(text)
        length += len(text)
        last = match.end()
    parts.append(template[last:].replace("\x00", "{").replace("\x01", "}"))
    return Document("".join(parts), tuple(spans), lang, fmt)


def build(split: str, min_spans: int = 1200) -> list[Document]:
    seed, templates = SPLITS[split]
    rng = random.Random(seed)
    docs: list[Document] = []
    total = 0
    while total < min_spans:
        for lang, fmt, template in templates:
            doc = fill(template, rng, lang, fmt)
            docs.append(doc)
            total += len(doc.spans)
    return docs
