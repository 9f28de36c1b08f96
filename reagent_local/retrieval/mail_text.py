"""An e-mail message (.eml, RFC 5322) as blocks, with the standard library's ``email`` package.

The subject is the title; every passage's heading is ``Subject (from Sender)``, so a citation
says which mail and whose. The first block names the sender, recipients and date; the body is
the plain-text part, else the HTML part read as HTML. Attachments are not read (their names
are listed).
"""

from __future__ import annotations

from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from .doc_blocks import Block, Parsed, html_blocks, text_blocks
from .pdf_text import Unreadable, unligature


def _header(message: EmailMessage, name: str) -> str:
    try:
        return " ".join(str(message.get(name, "") or "").split())
    except (ValueError, TypeError, IndexError):  # a malformed header: left out
        return ""


def eml_blocks(data: bytes) -> Parsed:
    """The subject and blocks of one e-mail message."""
    try:
        message = BytesParser(policy=policy.default).parsebytes(data)
    except (ValueError, TypeError, IndexError, LookupError) as exc:
        raise Unreadable("damaged-file", f"not a mail message ({exc})") from None
    subject, sender = _header(message, "Subject"), _header(message, "From")
    if not (subject or sender or _header(message, "Date")):
        raise Unreadable("damaged-file", "no Subject, From or Date header: not a mail message")
    heading = (f"{subject or '(no subject)'} (from {sender})" if sender else subject or "(no subject)",)
    facts = [f"{name}: {value}" for name in ("From", "To", "Cc", "Date", "Subject")
             if (value := _header(message, name))]
    try:
        body = message.get_body(preferencelist=("plain", "html"))
        content = body.get_content() if body is not None else ""
        attachments = [part.get_filename() or "unnamed" for part in message.iter_attachments()]
    except (KeyError, LookupError, ValueError, TypeError, AttributeError) as exc:
        raise Unreadable("damaged-file", f"{type(exc).__name__}: {exc}"[:160]) from None
    if attachments:
        facts.append("Attachments (not read): " + ", ".join(attachments))
    parsed = html_blocks(content) if body is not None and body.get_content_subtype() == "html" else text_blocks(content)
    blocks = [Block("\n".join(facts), heading)]
    blocks += [Block(unligature(b.text), heading) for b in parsed.blocks]
    return Parsed(subject or None, blocks)
