//! Checks for personal data: payment card numbers (issuer prefix, length, Luhn), US social
//! security numbers (no invalid area, group or serial), IBANs (country length, mod-97), phone
//! numbers and e-mail addresses. Each is O(length of the match).

/// Spans the checks read are ASCII (the patterns say so), so bytes are characters.
fn digits(part: &str) -> Vec<u8> {
    part.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect()
}

fn number(d: &[u8]) -> u32 {
    d.iter().fold(0, |n, &x| n * 10 + u32::from(x))
}

pub fn luhn(d: &[u8]) -> bool {
    let total: u32 = d
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &x)| {
            let x = u32::from(x);
            if i % 2 == 1 {
                if x > 4 {
                    x * 2 - 9
                } else {
                    x * 2
                }
            } else {
                x
            }
        })
        .sum();
    total % 10 == 0
}

/// A known issuer prefix (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro) with
/// a length that issuer uses.
fn card_brand_ok(d: &[u8]) -> bool {
    let n = d.len();
    let (p2, p3, p4) = (number(&d[..2]), number(&d[..3]), number(&d[..4]));
    if d[0] == 4 {
        return matches!(n, 13 | 16 | 19);
    }
    if (51..=55).contains(&p2) || (2221..=2720).contains(&p4) {
        return n == 16;
    }
    if p2 == 34 || p2 == 37 {
        return n == 15;
    }
    if p4 == 6011 || (644..=649).contains(&p3) || p2 == 65 || (3528..=3589).contains(&p4) || p2 == 62 {
        return (16..=19).contains(&n);
    }
    if (300..=305).contains(&p3) || matches!(p2, 36 | 38 | 39) {
        return (14..=19).contains(&n);
    }
    if p2 == 50 || (56..=69).contains(&p2) {
        return (13..=19).contains(&n);
    }
    false
}

/// 13 to 19 digits, ungrouped or grouped with one kind of separator (first group of 4), not a
/// decimal or part of a longer dashed number, a known issuer, a valid Luhn checksum.
pub fn card_ok(text: &str, span: (usize, usize)) -> bool {
    let b = text.as_bytes();
    let (s, e) = span;
    if s > 0 && b"-.,".contains(&b[s - 1]) {
        return false;
    }
    if e < b.len() && b"-.,".contains(&b[e]) && b.get(e + 1).is_some_and(u8::is_ascii_digit) {
        return false;
    }
    let part = &text[s..e];
    let d = digits(part);
    let mut seps: Vec<u8> = part.bytes().filter(|c| !c.is_ascii_digit()).collect();
    seps.sort_unstable();
    seps.dedup();
    if seps.len() > 1 || !(13..=19).contains(&d.len()) {
        return false;
    }
    if let Some(&sep) = seps.first() {
        let groups: Vec<&str> = part.split(sep as char).collect();
        let (last, inner) = groups.split_last().expect("split yields one piece at least");
        if groups[0].len() != 4 || !inner.iter().all(|g| (3..=6).contains(&g.len())) || !(1..=6).contains(&last.len()) {
            return false;
        }
    }
    if d.iter().all(|&x| x == d[0]) {
        return false;
    }
    card_brand_ok(&d) && luhn(&d)
}

/// Well-known numbers printed as examples (a wallet insert, advertising, documentation).
const EXAMPLE_SSNS: &[&str] = &["078051120", "219099999", "123456789"];

/// AAA-GG-SSSS with a valid area (not 000, 666, 900–999), group (not 00) and serial (not 0000),
/// not a famous example, not part of a longer dashed number.
pub fn ssn_ok(text: &str, span: (usize, usize)) -> bool {
    let b = text.as_bytes();
    let (s, e) = span;
    if (s > 0 && b"-/.".contains(&b[s - 1])) || (e < b.len() && b"-/".contains(&b[e])) {
        return false;
    }
    let d: String = text[s..e].chars().filter(|c| c.is_ascii_digit()).collect();
    let area: u32 = d[..3].parse().unwrap_or(0);
    !(area == 0 || area == 666 || area >= 900 || &d[3..5] == "00" || &d[5..] == "0000" || EXAMPLE_SSNS.contains(&d.as_str()))
}

/// IBAN length per country (ISO 13616 registry).
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24), ("AE", 23), ("AL", 28), ("AT", 20), ("AZ", 28), ("BA", 20), ("BE", 16), ("BG", 22), ("BH", 22),
    ("BI", 27), ("BR", 29), ("BY", 28), ("CH", 21), ("CR", 22), ("CY", 28), ("CZ", 24), ("DE", 22), ("DJ", 27),
    ("DK", 18), ("DO", 28), ("EE", 20), ("EG", 29), ("ES", 24), ("FI", 18), ("FK", 18), ("FO", 18), ("FR", 27),
    ("GB", 22), ("GE", 22), ("GI", 23), ("GL", 18), ("GR", 27), ("GT", 28), ("HR", 21), ("HU", 28), ("IE", 22),
    ("IL", 23), ("IQ", 23), ("IS", 26), ("IT", 27), ("JO", 30), ("KW", 30), ("KZ", 20), ("LB", 28), ("LC", 32),
    ("LI", 21), ("LT", 20), ("LU", 20), ("LV", 21), ("LY", 25), ("MC", 27), ("MD", 24), ("ME", 22), ("MK", 19),
    ("MN", 20), ("MR", 27), ("MT", 31), ("MU", 30), ("NI", 28), ("NL", 18), ("NO", 15), ("OM", 23), ("PK", 24),
    ("PL", 28), ("PS", 29), ("PT", 25), ("QA", 29), ("RO", 24), ("RS", 22), ("RU", 33), ("SA", 24), ("SC", 31),
    ("SD", 18), ("SE", 24), ("SI", 19), ("SK", 24), ("SM", 27), ("SO", 23), ("ST", 25), ("SV", 28), ("TL", 23),
    ("TN", 24), ("TR", 26), ("UA", 29), ("VA", 22), ("VG", 24), ("XK", 20), ("YE", 30),
];

/// The IBAN at the start of the match: the country's number of characters (spaces between
/// groups skipped), not running on into a longer word, with a mod-97 remainder of 1.
pub fn iban_span(text: &str, span: (usize, usize)) -> Option<(usize, usize)> {
    let b = text.as_bytes();
    let (s, e) = span;
    let country = &text[s..s + 2];
    let length = IBAN_LENGTHS.iter().find(|(c, _)| *c == country)?.1;
    let mut code: Vec<u8> = Vec::with_capacity(length);
    let mut end = s;
    for (i, &c) in b.iter().enumerate().take(e).skip(s) {
        if c != b' ' {
            code.push(c);
            end = i + 1;
            if code.len() == length {
                break;
            }
        }
    }
    if code.len() < length || b.get(end).is_some_and(u8::is_ascii_alphanumeric) {
        return None;
    }
    code.rotate_left(4);
    let rem = code.iter().fold(0u32, |rem, &c| {
        if c.is_ascii_digit() {
            (rem * 10 + u32::from(c - b'0')) % 97
        } else {
            (rem * 100 + u32::from(c - b'A') + 10) % 97
        }
    });
    (rem == 1).then_some((s, end))
}

/// 8 to 15 digits, not glued to a word or a longer number.
pub fn phone_ok(text: &str, span: (usize, usize)) -> bool {
    let b = text.as_bytes();
    let (s, e) = span;
    if s > 0 && (b[s - 1].is_ascii_alphanumeric() || b"-./+".contains(&b[s - 1])) {
        return false;
    }
    if e < b.len() && (b[e].is_ascii_alphanumeric() || b"-/".contains(&b[e])) {
        return false;
    }
    // Not one group of a longer spaced number (a card number, a table of figures).
    let digit_at = |i: Option<usize>| i.and_then(|i| b.get(i)).is_some_and(u8::is_ascii_digit);
    if (s >= 1 && b[s - 1] == b' ' && digit_at(s.checked_sub(2))) || (b.get(e) == Some(&b' ') && digit_at(Some(e + 1))) {
        return false;
    }
    (8..=15).contains(&digits(&text[s..e]).len())
}

/// Domains reserved for documentation (RFC 2606): their addresses belong to no one.
const DOC_EMAIL_DOMAINS: &[&str] = &["example.com", "example.org", "example.net"];
const DOC_EMAIL_TLDS: &[&str] = &[".example", ".test", ".invalid", ".localhost"];

pub fn email_ok(addr: &str) -> bool {
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let domain = domain.to_ascii_lowercase();
    if local.starts_with('.') || local.ends_with('.') {
        return false;
    }
    !(DOC_EMAIL_DOMAINS
        .iter()
        .any(|d| domain == *d || domain.ends_with(&format!(".{d}")))
        || DOC_EMAIL_TLDS.iter().any(|t| domain.ends_with(t)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(text: &str) -> (usize, usize) {
        (0, text.len())
    }

    #[test]
    fn cards() {
        for ok in ["4111111111111111", "4111 1111 1111 1111", "5500-0000-0000-0004", "378282246310005", "6011111111111117"] {
            assert!(card_ok(ok, whole(ok)), "{ok}");
        }
        for bad in [
            "4111111111111112",         // Luhn
            "1234567812345670",         // no issuer starts with 1
            "4111 1111-1111 1111",      // mixed separators
            "41 1111 1111 1111 11",     // odd grouping
            "0000000000000000",
            "5555555555555555",          // one digit repeated
        ] {
            assert!(!card_ok(bad, whole(bad)), "{bad}");
        }
        assert!(!card_ok("x.4111111111111111", (2, 18)));
    }

    #[test]
    fn ssns() {
        assert!(ssn_ok("536-22-1234", (0, 11)));
        for bad in ["000-12-3456", "666-12-3456", "912-12-3456", "536-00-1234", "536-22-0000", "078-05-1120", "123-45-6789"] {
            assert!(!ssn_ok(bad, whole(bad)), "{bad}");
        }
        assert!(!ssn_ok("1-536-22-1234", (2, 13)));
    }

    #[test]
    fn ibans() {
        let t = "DE89 3704 0044 0532 0130 00 and";
        assert_eq!(iban_span(t, (0, t.len())), Some((0, 27)));
        let t = "GB82WEST12345698765432";
        assert_eq!(iban_span(t, whole(t)), Some(whole(t)));
        let t = "GB82WEST12345698765433"; // checksum
        assert_eq!(iban_span(t, whole(t)), None);
        let t = "ZZ82WEST12345698765432"; // no such country
        assert_eq!(iban_span(t, whole(t)), None);
    }

    #[test]
    fn phones_and_emails() {
        assert!(phone_ok("+1 415 555 2671", (0, 15)));
        assert!(!phone_ok("12345", (0, 5)));
        assert!(email_ok("jane.doe@gmail.com"));
        assert!(!email_ok("user@example.com"));
        assert!(!email_ok("a@mail.example"));
    }
}
