//! The built-in rule set: one pattern per credential shape, plus the checks run on each match.
//!
//! Patterns use only what both Rust `regex` and Python `re` read the same way, so a reference
//! implementation can run them unchanged after two textual swaps (`(?-u:` -> `(?a:` and
//! `(?i-u:` -> `(?ai:`): ASCII word boundaries and ASCII case-insensitivity are written as
//! scoped `-u` groups, whitespace as explicit classes (`[ \t\r\n]`), never `\s`, `\w` or `\d`.
//!
//! Named groups: `secret` is the span reported and redacted (the whole match without it);
//! `body` is the random part the checks look at (the secret without it); `user` is the user
//! name in `scheme://user:password@host` shapes; `exact`, when it takes part, is the vendor's
//! own format (a prefix only that vendor uses, the body's length and alphabet): such a match is
//! reported whatever its body looks like (`sk_live_AAAA…` in a vendor's docs is still a live
//! key's shape), unless it is a published example or a template slot. A rule may offer a looser
//! alternative after it (`body`), which must also look generated.
//!
//! Every repetition that can run on ends in a class the match simply stops at, and optional
//! tails after it are short, so a search never scans far past the match it reports: the scan
//! stays linear in the text (see the adversarial tests).

/// What runs on a match after the regex (see `checks.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A value bound to a credential keyword (`Bearer …`, `Authorization: …`): of credential
    /// length it is reported unless masked; shorter, it is judged as a `Token`.
    Bound,
    /// A prefixed token: placeholder words, character classes, diversity, no runs or sequences.
    Token,
    /// Like `Token`, but `sk-ant-…` belongs to the Anthropic rule.
    NotAnthropic,
    /// A PEM-armoured private key: the base64 body must be long and varied enough.
    PrivateKey,
    /// `user:password` in a URL or a command line: the password must not be a placeholder or
    /// equal the user; `user:x-oauth-basic` (or `token:` with no password) reports the user.
    Credentials,
    /// Like `Credentials`, for any scheme but the databases' (`connection-string` judges those).
    UrlCredentials,
    /// `name = value` with a credential-like name: the value must look like a secret, not code
    /// (a variable, a dotted path, a URL, a boolean), and the name must not say it is public.
    Assignment,
    /// Like `Token`, and the characters just before and after the span must not continue a token
    /// (for shapes with no fixed prefix, where a regex word boundary does not fit).
    Guarded,
    /// A value with no vendor prefix, after a key that only hints at a secret (or after none):
    /// it must look machine-made (random: entropy, mixed characters, no words or sequences).
    Entropy,
    /// Like `Entropy`, with no key at all: stricter (upper, lower and digits, not part of a path).
    Bare,
    /// "my wifi password is …": the value must look like a password, not an ordinary word.
    Disclosure,
    /// The match is reported as it is (the marker of a credential file).
    Literal,
    /// A payment card number: Luhn checksum, a known issuer prefix and length, tidy grouping.
    CardNumber,
    /// A US social security number: no invalid area (000, 666, 900–999), group or serial.
    Ssn,
    /// An IBAN: the country's length and the mod-97 checksum.
    Iban,
    /// A phone number: 7 to 15 digits, not part of a longer number.
    Phone,
    /// An e-mail address (documentation domains such as example.com excepted).
    Email,
    /// A user rule: reported as matched, no checks.
    User,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bound => "bound",
            Kind::Token => "token",
            Kind::NotAnthropic => "not_anthropic",
            Kind::PrivateKey => "private_key",
            Kind::Credentials => "credentials",
            Kind::UrlCredentials => "url_credentials",
            Kind::Assignment => "assignment",
            Kind::Guarded => "guarded",
            Kind::Entropy => "entropy",
            Kind::Bare => "bare",
            Kind::Disclosure => "disclosure",
            Kind::Literal => "literal",
            Kind::CardNumber => "card_number",
            Kind::Ssn => "ssn",
            Kind::Iban => "iban",
            Kind::Phone => "phone",
            Kind::Email => "email",
            Kind::User => "user",
        }
    }
}

/// What a rule protects: credentials, or personal data about someone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Secret,
    PersonalData,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Secret => "secret",
            Category::PersonalData => "pii",
        }
    }
}

/// Checks for one rule: `min_classes` of {upper, lower, digit, symbol} and `min_distinct`
/// distinct characters in the checked part, plus what `kind` adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    pub kind: Kind,
    pub min_classes: u8,
    pub min_distinct: u8,
}

pub struct BuiltinRule {
    pub id: &'static str,
    pub description: &'static str,
    pub pattern: &'static str,
    pub check: Check,
    pub category: Category,
    /// Whether a scanner runs the rule unless told otherwise (`phone` and `email` are off).
    pub on_by_default: bool,
}

const fn c(kind: Kind, min_classes: u8, min_distinct: u8) -> Check {
    Check {
        kind,
        min_classes,
        min_distinct,
    }
}

const TOKEN: Check = c(Kind::Token, 2, 5);

/// The defaults of a credential rule (`..SECRET` fills in what a rule does not say).
const SECRET: BuiltinRule = BuiltinRule {
    id: "",
    description: "",
    pattern: "",
    check: TOKEN,
    category: Category::Secret,
    on_by_default: true,
};

/// The defaults of a personal-data rule.
const PII: BuiltinRule = BuiltinRule {
    category: Category::PersonalData,
    ..SECRET
};

/// Built-in rules, most specific first: when two rules report the same span the earlier wins.
pub const BUILTIN: &[BuiltinRule] = &[
    BuiltinRule {
        id: "private-key",
        description: "PEM-armoured private key (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted, PGP)",
        pattern: r#"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?P<body>(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash): ?[^\r\n\\]{0,200}|[A-Za-z0-9+/= \t\r\n]|\\[rn])*)(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"#,
        check: c(Kind::PrivateKey, 2, 10),
        ..SECRET
    },
    BuiltinRule {
        id: "anthropic-api-key",
        description: "Anthropic API key (sk-ant-… with 20+ characters)",
        pattern: r#"(?-u:\b)sk-ant-(?P<exact>[A-Za-z0-9_-]{20,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "openai-api-key",
        description: "OpenAI-style secret key (sk-… with 20+ characters: sk-proj-…, sk-svcacct-…, sk-admin-…, legacy sk-…)",
        pattern: r#"(?-u:\b)sk-(?P<exact>[A-Za-z0-9_-]{20,})"#,
        check: c(Kind::NotAnthropic, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "github-token",
        description: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)",
        pattern: r#"(?-u:\b)gh[pousr]_(?:(?P<exact>[A-Za-z0-9]{36,251})(?-u:\b)|(?P<body>[A-Za-z0-9_]{30,}))(?:\.[A-Za-z0-9_-]{8,}){0,2}"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "github-fine-grained-pat",
        description: "GitHub fine-grained personal access token (github_pat_…)",
        pattern: r#"(?-u:\b)github_pat_(?P<exact>[A-Za-z0-9_]{40,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "gitlab-token",
        description: "GitLab token (glpat-, gldt-, glptt-, glrt-, … and GR1348941 runner registration)",
        pattern: r#"(?-u:\b)(?:gl(?:pat|dt|ptt|rt|rtr|cbt|oas|soat|ft|imt|agent|ffct)-|GR1348941)(?P<exact>[A-Za-z0-9_.-]{20,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "stripe-key",
        description: "Stripe secret, restricted or live publishable key (sk_live_, rk_live_, sk_test_, rk_test_, sk_prod_, pk_live_)",
        pattern: r#"(?-u:\b)(?:(?:(?:sk|rk)_(?:live|test|prod)|pk_live)_(?P<exact>[A-Za-z0-9]{16,247})(?-u:\b)|(?:(?:sk|rk)_(?:live|test)|pk_live)_(?P<body>[A-Za-z0-9]{16,}))"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "stripe-webhook-secret",
        description: "Stripe webhook signing secret (whsec_…)",
        pattern: r#"(?-u:\b)whsec_(?P<exact>[A-Za-z0-9+/=]{24,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "aws-access-key-id",
        description: "AWS access key id (AKIA…, ASIA…, ABIA…, ACCA…)",
        pattern: r#"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?P<exact>[A-Z0-9]{16})(?-u:\b)"#,
        check: c(Kind::Token, 1, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "aws-secret-access-key",
        description: "AWS secret access key assigned to aws_secret_access_key (or similar)",
        pattern: r#"(?i-u:secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key|aws[_-]?secret)["']?[ \t]{0,4}(?:=>|:=|=|:)[ \t]{0,4}["']?(?P<secret>[A-Za-z0-9/+]{40})"#,
        check: c(Kind::Guarded, 2, 10),
        ..SECRET
    },
    BuiltinRule {
        id: "authorization-header",
        description: "Authorization header value (Bearer, Basic, Token, … or a bare credential)",
        pattern: r#"(?i-u:proxy-authorization|authorization)["']?[ \t]{0,4}[:=][ \t]{0,4}["']?(?:(?i-u:bearer|basic|token|digest|bot|api-key|apikey|api-token|sso-key|negotiate|ntlm)[ \t]{1,4})?(?P<secret>[A-Za-z0-9._~+/=@-]{8,})"#,
        check: c(Kind::Bound, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "bearer-token",
        description: "Bearer token outside an Authorization header",
        pattern: r#"(?-u:\b)(?i-u:bearer)[ \t]{1,4}(?P<secret>[A-Za-z0-9._~+/=-]{16,})"#,
        check: c(Kind::Bound, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "jwt",
        description: "JSON Web Token (three base64url segments, header and payload JSON)",
        pattern: r#"(?-u:\b)(?P<exact>(?:eyJ|eyAi|ewo[gi])[A-Za-z0-9_-]{8,}\.(?:eyJ|eyAi|ewo[gi])[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "slack-token",
        description: "Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-: a numeric id first; xoxe-, xapp-)",
        pattern: r#"(?-u:\b)(?:xox[abposr]-(?P<exact>(?:[0-9]{1,3}-)?[0-9]{8,20}-[A-Za-z0-9-]{8,})|(?:xoxe\.xox[bp]|xoxe|xapp)-[0-9]{1,3}-[A-Za-z0-9-]{8,})"#,
        check: c(Kind::Token, 1, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "slack-webhook",
        description: "Slack incoming webhook or workflow URL",
        pattern: r#"(?i-u:https?://hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<body>[A-Za-z0-9_/+-]{20,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "discord-webhook",
        description: "Discord webhook URL",
        pattern: r#"(?i-u:https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/)[0-9]{5,30}/(?P<body>[A-Za-z0-9_-]{60,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "google-api-key",
        description: "Google API key (AIza…)",
        pattern: r#"(?-u:\b)AIza(?P<exact>[A-Za-z0-9_-]{35})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "google-oauth-client-secret",
        description: "Google OAuth client secret (GOCSPX-…)",
        pattern: r#"(?-u:\b)GOCSPX-(?P<exact>[A-Za-z0-9_-]{28})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "npm-token",
        description: "npm access token (npm_…)",
        pattern: r#"(?-u:\b)npm_(?P<exact>[A-Za-z0-9]{36})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "pypi-token",
        description: "PyPI upload token (pypi-AgE…)",
        pattern: r#"(?-u:\b)pypi-(?P<exact>AgE[A-Za-z0-9_-]{50,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "twilio-key",
        description: "Twilio API key or account SID (SK/AC + 32 hex)",
        pattern: r#"(?-u:\b)(?:SK|AC)(?P<body>[0-9a-f]{32})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "sendgrid-api-key",
        description: "SendGrid API key (SG.x.y)",
        pattern: r#"(?-u:\b)SG\.(?P<exact>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "azure-connection-string",
        description: "Azure storage / Service Bus key in a connection string (AccountKey=, SharedAccessKey=)",
        pattern: r#"(?i-u:accountkey|sharedaccesskey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "azure-sas-signature",
        description: "Azure shared access signature (sig= in a SAS URL or token)",
        pattern: r#"[?&;](?i-u:sig)=(?P<secret>[A-Za-z0-9%+/]{30,}={0,2})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "azure-ad-client-secret",
        description: "Azure AD (Entra ID) application client secret (…Q~…)",
        pattern: r#"(?P<secret>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})"#,
        check: c(Kind::Guarded, 2, 10),
        ..SECRET
    },
    BuiltinRule {
        id: "1password-service-account-token",
        description: "1Password service account token (ops_eyJ…)",
        pattern: r#"(?-u:\b)ops_(?P<exact>eyJ[A-Za-z0-9+/_=-]{100,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "age-secret-key",
        description: "age encryption secret key",
        pattern: r#"AGE-SECRET-KEY-1(?P<exact>[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})"#,
        check: c(Kind::Token, 1, 10),
        ..SECRET
    },
    BuiltinRule {
        id: "atlassian-api-token",
        description: "Atlassian API token (ATATT3…)",
        pattern: r#"(?-u:\b)ATATT3(?P<exact>[A-Za-z0-9_=-]{150,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "cloudflare-api-token",
        description: "Cloudflare API token or key (cfat_, cfut_, cfk_)",
        pattern: r#"(?-u:\b)(?:cfat|cfut|cfk)_(?P<exact>[A-Za-z0-9]{40}[a-f0-9]{8})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "databricks-token",
        description: "Databricks personal access token (dapi…)",
        pattern: r#"(?-u:\b)dapi(?P<exact>[a-fA-F0-9]{32}(?:-[0-9]{1,3})?)(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "digitalocean-token",
        description: "DigitalOcean token (dop_v1_, doo_v1_, dor_v1_)",
        pattern: r#"(?-u:\b)do[por]_v1_(?P<exact>[a-f0-9]{64})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "docker-pat",
        description: "Docker Hub personal access token (dckr_pat_…)",
        pattern: r#"(?-u:\b)dckr_pat_(?P<exact>[A-Za-z0-9_-]{27,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "doppler-token",
        description: "Doppler token (dp.st., dp.ct., dp.sa., …)",
        pattern: r#"(?-u:\b)dp\.(?:st|ct|sa|scim|audit)\.(?P<exact>[A-Za-z0-9_-]{40,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "facebook-access-token",
        description: "Facebook/Meta access token (EAA…) or app token (id|secret)",
        pattern: r#"(?-u:\b)(?:EAA(?P<body>[A-Za-z0-9]{90,})|[0-9]{15,16}\|[A-Za-z0-9_-]{27}(?-u:\b))"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "figma-token",
        description: "Figma personal access token (figd_…)",
        pattern: r#"(?-u:\b)figd_(?P<exact>[A-Za-z0-9_-]{40,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "flyio-token",
        description: "Fly.io access token (fo1_…)",
        pattern: r#"(?-u:\b)fo1_(?P<exact>[A-Za-z0-9_-]{39,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "grafana-token",
        description: "Grafana Cloud or service account token (glc_, glsa_)",
        pattern: r#"(?-u:\b)(?:glc|glsa)_(?P<exact>[A-Za-z0-9_+/=-]{32,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "groq-api-key",
        description: "Groq API key (gsk_…)",
        pattern: r#"(?-u:\b)gsk_(?P<exact>[A-Za-z0-9]{52})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "hashicorp-vault-token",
        description: "HashiCorp Vault token (hvs., hvb., hvr.)",
        pattern: r#"(?-u:\b)hv[sbr]\.(?P<exact>[A-Za-z0-9_-]{24,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "hashicorp-vault-legacy-token",
        description: "HashiCorp Vault legacy service token (s. + 24 characters)",
        pattern: r#"(?-u:\b)s\.(?P<body>[A-Za-z0-9]{24})(?-u:\b)"#,
        check: c(Kind::Token, 3, 10),
        ..SECRET
    },
    BuiltinRule {
        id: "huggingface-token",
        description: "Hugging Face access token (hf_…, api_org_…)",
        pattern: r#"(?-u:\b)(?:hf|api_org)_(?P<exact>[A-Za-z]{34})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "linear-api-key",
        description: "Linear API key (lin_api_…)",
        pattern: r#"(?-u:\b)lin_(?:api|oauth)_(?P<exact>[A-Za-z0-9]{40,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "mailchimp-api-key",
        description: "Mailchimp API key (32 hex + -usN)",
        pattern: r#"(?-u:\b)(?P<body>[0-9a-f]{32})-us[0-9]{1,2}(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "mailgun-api-key",
        description: "Mailgun API key (key-…)",
        pattern: r#"(?-u:\b)key-(?P<exact>[0-9a-f]{32})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "newrelic-key",
        description: "New Relic user API key (NRAK-…)",
        pattern: r#"(?-u:\b)NRAK-(?P<exact>[A-Z0-9]{27})(?-u:\b)"#,
        check: c(Kind::Token, 1, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "notion-token",
        description: "Notion integration token (ntn_…)",
        pattern: r#"(?-u:\b)ntn_(?P<exact>[0-9]{11}[A-Za-z0-9]{35})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "openshift-token",
        description: "OpenShift user token (sha256~…)",
        pattern: r#"(?-u:\b)sha256~(?P<exact>[A-Za-z0-9_-]{43})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "perplexity-api-key",
        description: "Perplexity API key (pplx-…)",
        pattern: r#"(?-u:\b)pplx-(?P<exact>[A-Za-z0-9]{48})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "postman-api-key",
        description: "Postman API key (PMAK-…)",
        pattern: r#"(?-u:\b)PMAK-(?P<exact>[a-f0-9]{24}-[a-f0-9]{34})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "pulumi-token",
        description: "Pulumi access token (pul-…)",
        pattern: r#"(?-u:\b)pul-(?P<exact>[a-f0-9]{40})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "replicate-token",
        description: "Replicate API token (r8_…)",
        pattern: r#"(?-u:\b)r8_(?P<exact>[A-Za-z0-9]{37})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "sentry-token",
        description: "Sentry organisation or user auth token (sntrys_, sntryu_)",
        pattern: r#"(?-u:\b)sntry[su]_(?P<exact>[A-Za-z0-9_+/=-]{40,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "shopify-token",
        description: "Shopify app secret or access token (shpss_, shpat_, shpca_, shppa_)",
        pattern: r#"(?-u:\b)shp(?:ss|at|ca|pa)_(?P<exact>[A-Za-z0-9]{32,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "sourcegraph-token",
        description: "Sourcegraph access token (sgp_…)",
        pattern: r#"(?-u:\b)sgp_(?:[A-Fa-f0-9]{16}_|local_)?(?P<exact>[A-Fa-f0-9]{40})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "sourcegraph-token-assignment",
        description: "Sourcegraph access token (40 hex) given to a Sourcegraph-named setting (sourcegraph: …)",
        pattern: r#"(?i-u:sourcegraph)[A-Za-z0-9_.-]{0,20}["']?[ \t]{0,4}(?:=|:)[ \t]{0,4}["']?(?P<secret>[A-Fa-f0-9]{40})(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "square-token",
        description: "Square access token or OAuth secret (EAAA…, sq0atp-, sq0csp-)",
        pattern: r#"(?-u:\b)(?:EAAA|sq0atp-|sq0csp-)(?P<body>[A-Za-z0-9_-]{22,60})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "tailscale-key",
        description: "Tailscale API or auth key (tskey-…)",
        pattern: r#"(?:(?m:^)|[^A-Za-z])(?P<secret>tskey-[a-z]{2,12}-(?P<exact>[A-Za-z0-9]{6,}-[A-Za-z0-9]{10,}))"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "telegram-bot-token",
        description: "Telegram bot token (id:AA…)",
        pattern: r#"(?-u:\b)[0-9]{8,10}:AA(?P<exact>[A-Za-z0-9_-]{33})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "vercel-token",
        description: "Vercel token (vcp_, vci_, vca_, vcr_, vck_)",
        pattern: r#"(?-u:\b)vc[pikar]_(?P<exact>[A-Za-z0-9]{24,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "xai-api-key",
        description: "xAI API key (xai-…)",
        pattern: r#"(?-u:\b)xai-(?P<exact>[A-Za-z0-9]{70,})"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "clojars-token",
        description: "Clojars deploy token (CLOJARS_…)",
        pattern: r#"(?-u:\b)CLOJARS_(?P<exact>[a-z0-9]{60})(?-u:\b)"#,
        check: TOKEN,
        ..SECRET
    },
    BuiltinRule {
        id: "discord-bot-token",
        description: "Discord bot or user token (base64 id . timestamp . HMAC)",
        pattern: r#"(?-u:\b)[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "artifactory-token",
        description: "JFrog Artifactory API key (AKCp…) or reference token (cmVmdGtu…)",
        pattern: r#"(?-u:\b)(?:AKCp(?P<exact>[A-Za-z0-9]{69})|cmVmdGtu[A-Za-z0-9]{56})(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "aws-bedrock-api-key",
        description: "Amazon Bedrock API key (long-lived ABSK…, short-lived bedrock-api-key-…)",
        pattern: r#"(?-u:\b)(?P<exact>ABSKQmVkcm9ja0FQSUtleS[A-Za-z0-9+/]{91,251}={0,2}|bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=]*)"#,
        check: c(Kind::Guarded, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "clickhouse-cloud-secret",
        description: "ClickHouse Cloud API secret key (4b1d…)",
        pattern: r#"(?-u:\b)4b1d(?P<body>[A-Za-z0-9]{38})(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "cloudflare-origin-ca-key",
        description: "Cloudflare Origin CA key (v1.0-…)",
        pattern: r#"(?-u:\b)v1\.0-[a-f0-9]{24}-(?P<exact>[a-f0-9]{146})(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "intra42-client-secret",
        description: "42 Intra OAuth client secret (s-s4t2ud-…, s-s4t2af-…)",
        pattern: r#"(?-u:\b)s-s4t2(?:ud|af)-(?P<exact>[a-f0-9]{64})(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "maxmind-license-key",
        description: "MaxMind license key (…_mmk)",
        pattern: r#"(?-u:\b)(?P<body>[A-Za-z0-9]{6}_[A-Za-z0-9]{29})_mmk(?-u:\b)"#,
        ..SECRET
    },
    BuiltinRule {
        id: "npmrc-auth-token",
        description: "npm registry credential in an .npmrc line (//registry/:_authToken=…, :_auth=, :_password=)",
        pattern: r#"/:_(?i-u:authtoken|auth|password)[ \t]{0,4}=[ \t]{0,4}["']?(?P<secret>(?P<exact>[^ \t\r\n"']{8,}))"#,
        ..SECRET
    },
    BuiltinRule {
        id: "azure-identity",
        description: "Azure AD (Entra ID) tenant or client id given to an Azure-named setting (AZURE_CLIENT_ID=…, ad_tenant_id: …)",
        pattern: r#"(?P<key>(?i-u:azure|(?-u:\b)a?ad|entra)[_-]?(?i-u:tenant|client)[_-]?(?i-u:id))["']?[ \t]{0,4}(?:=|:)[ \t]{0,4}["']?(?P<secret>[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})(?-u:\b)"#,
        check: c(Kind::Token, 1, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "gcp-service-account",
        description: "Google Cloud service account key file (\"type\": \"service_account\")",
        pattern: r#""type"[ \t]{0,4}:[ \t]{0,4}"service_account""#,
        check: c(Kind::Literal, 0, 0),
        ..SECRET
    },
    BuiltinRule {
        id: "connection-string",
        description: "Database or broker URL with an embedded password (postgres, mysql, mongodb+srv, redis, amqp, …)",
        pattern: r#"(?-u:\b)(?i-u:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|cockroachdb|clickhouse|couchdb|neo4j(?:\+s)?|bolt|nats|kafka|memcached|cassandra|influxdb|elasticsearch)://(?P<user>[^:@/ \t\r\n"'<>]{0,128}):(?P<secret>[^ \t\r\n"'/<>]{1,256})@[^ \t\r\n"'<>@/]"#,
        check: c(Kind::Credentials, 1, 3),
        ..SECRET
    },
    BuiltinRule {
        id: "url-credentials",
        description: "URL with user:password before the host (any scheme: http, ftp, ssh, git, ldap, smtp, …)",
        pattern: r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]{1,30}://(?P<user>[^:@/ \t\r\n"'<>]{0,128}):(?P<secret>[^ \t\r\n"'/<>]{1,256})@[^ \t\r\n"'<>@/]"#,
        check: c(Kind::UrlCredentials, 1, 3),
        ..SECRET
    },
    BuiltinRule {
        id: "cli-user-password",
        description: "user:password given to a command line (-u / --user, as curl takes it; a lone token: reports the token)",
        pattern: r#"(?:[ \t]-u[ \t]{0,4}|--user[ \t]{1,4}|--user=)["']?(?P<user>[^ \t\r\n"':]{0,64})["']?:["']?(?P<secret>[^ \t\r\n"']{0,128})"#,
        check: c(Kind::Credentials, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "generic-secret-assignment",
        description: "A credential-named key given a value: api_key|token|password|secret … = value (also :, =>, .=, ?=, ::=, typed declarations, (\"KEY\", \"value\") pairs, XML elements, JSON and YAML forms)",
        pattern: r#"(?P<key>(?i-u:(?:api|access|secret|private|client|app|account|master|encryption|signing|session|service)[_-]?key|api[_-]?secret|apikey|token|secret|passw(?:or)?d|passphrase|pwd|pass|credentials?|auth))(?:["'][ \t]{0,4},[ \t]{0,4}["']|["']?(?:[ \t]{1,4}(?:string|String|str)|[ \t]{0,2}:[ \t]{0,2}(?:string|String|str))?[ \t]{0,4}(?:=>|:{1,3}=|[.?+]=|=|:|>[ \t\r\n]{0,12}))[ \t]{0,4}["'\x60]?(?P<secret>[^ \t\r\n"'\x60,;<>(){}\[\]\\]{6,})"#,
        check: c(Kind::Assignment, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "xml-credential",
        description: "XML setting whose key names a credential: <add key=\"DbPassword\" value=\"…\"/>, <entry key=\"token\">…</entry>",
        pattern: r#"(?i-u:key|name)[ \t]{0,4}=[ \t]{0,4}["'][A-Za-z0-9_.:-]{0,40}?(?P<key>(?i-u:passw(?:or)?d|pwd|secret|token|api[_-]?key|apikey|credentials?|private[_-]?key|access[_-]?key|connection[_-]?string))[A-Za-z0-9_.:-]{0,20}["'](?:[ \t\r\n]{1,8}(?i-u:value)[ \t]{0,4}=[ \t]{0,4}["']|[ \t]{0,4}>)(?P<secret>[^"'<>\r\n]{1,256})"#,
        check: c(Kind::Assignment, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "cli-secret-flag",
        description: "A command-line flag that takes a credential: --password VALUE, --api-key VALUE, --token VALUE",
        pattern: r#"(?:[ \t]|(?m:^))--(?:[A-Za-z0-9]{1,20}-){0,3}(?P<key>(?i-u:passw(?:or)?d|pass|pwd|secret|token|api-?key|access-?key|secret-?key|private-?key|credentials?|auth|bearer))(?:[ \t]{1,4}|=)["']?(?P<secret>[^ \t\r\n"'\x60]{6,})"#,
        check: c(Kind::Assignment, 2, 5),
        ..SECRET
    },
    BuiltinRule {
        id: "credential-disclosure",
        description: "A credential given in a sentence: \"my email password is …\", \"the wifi passphrase is …\", \"my PIN is …\"",
        pattern: r#"(?-u:\b)(?P<key>(?i-u:passwords?|passwd|passcode|pass code|passphrase|pass phrase|pin(?: code| number)?|wi-?fi (?:key|code)|network key|security code|api key|access token|secret key|unlock code|door code|gate code|alarm code))(?:[ \t]{1,4}(?i-u:for|to|of|on|at)(?:[ \t]{1,4}[^ \t\r\n]{1,30}){1,3})?[ \t]{1,4}(?i-u:is now|has been changed to|changed to|will be|is|was|are|reads)[ \t]{1,4}:?[ \t]{0,4}(?P<secret>"[^"\r\n]{1,64}"|'[^'\r\n]{1,64}'|[^ \t\r\n"']{1,64})"#,
        check: c(Kind::Disclosure, 0, 0),
        ..SECRET
    },
    BuiltinRule {
        id: "high-entropy-assignment",
        description: "A random-looking value given to a name that hints at a credential (STRIPE_KEY=…, authSig: …, *_TOKEN_2=…)",
        pattern: r#"(?P<key>[A-Za-z0-9_.-]{0,40}(?i-u:key|token|secret|auth|credential|passw|pwd|sig)[A-Za-z0-9_.-]{0,40})["']?[ \t]{0,4}(?:=>|:=|=|:)[ \t]{0,4}["'\x60]?(?P<secret>[A-Za-z0-9_+/=~.-]{16,})"#,
        check: c(Kind::Entropy, 2, 10),
        ..SECRET
    },
    BuiltinRule {
        id: "high-entropy-token",
        description: "A random-looking token on its own (upper case, lower case and digits, high entropy, not in a path or a data URI)",
        pattern: r#"(?-u:\b)[A-Za-z0-9][A-Za-z0-9_+/-]{23,}={0,2}"#,
        check: c(Kind::Bare, 3, 14),
        ..SECRET
    },
    BuiltinRule {
        id: "card-number",
        description: "Payment card number (Luhn checksum, known issuer prefix and length)",
        pattern: r#"(?-u:\b)[0-9](?:[ -]?[0-9]){11,18}(?-u:\b)"#,
        check: c(Kind::CardNumber, 0, 0),
        ..PII
    },
    BuiltinRule {
        id: "us-ssn",
        description: "US social security number (AAA-GG-SSSS, valid area, group and serial)",
        pattern: r#"(?-u:\b)[0-9]{3}-[0-9]{2}-[0-9]{4}(?-u:\b)"#,
        check: c(Kind::Ssn, 0, 0),
        ..PII
    },
    BuiltinRule {
        id: "iban",
        description: "International bank account number (country length and mod-97 checksum)",
        pattern: r#"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}"#,
        check: c(Kind::Iban, 0, 0),
        ..PII
    },
    BuiltinRule {
        id: "phone",
        description: "Phone number (international or national, 7 to 15 digits); off by default",
        pattern: r#"(?:\+[0-9]{1,3}[ .-]?)?(?:\([0-9]{1,4}\)[ .-]?)?(?-u:\b)[0-9]{2,4}[ .-]?[0-9]{3,4}[ .-]?[0-9]{3,4}(?-u:\b)"#,
        check: c(Kind::Phone, 0, 0),
        on_by_default: false,
        ..PII
    },
    BuiltinRule {
        id: "email",
        description: "E-mail address; off by default",
        pattern: r#"(?-u:\b)[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?-u:\b)"#,
        check: c(Kind::Email, 0, 0),
        on_by_default: false,
        ..PII
    },
];
