//! The built-in rule set: one pattern per credential shape, plus the checks run on each match.
//!
//! Patterns use only what both Rust `regex` and Python `re` read the same way, so a reference
//! implementation can run them unchanged after two textual swaps (`(?-u:` -> `(?a:` and
//! `(?i-u:` -> `(?ai:`): ASCII word boundaries and ASCII case-insensitivity are written as
//! scoped `-u` groups, whitespace as explicit classes (`[ \t\r\n]`), never `\s`, `\w` or `\d`.
//!
//! Named groups: `secret` is the span reported and redacted (the whole match without it);
//! `body` is the random part the checks look at (the secret without it); `user` is the user
//! name in `scheme://user:password@host` shapes.
//!
//! Every repetition that can run on ends in a class the match simply stops at, and optional
//! tails after it are short, so a search never scans far past the match it reports: the scan
//! stays linear in the text (see the adversarial tests).

/// What runs on a match after the regex (see `checks.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A prefixed token: placeholder words, character classes, diversity.
    Token,
    /// Like `Token`, but `sk-ant-…` belongs to the Anthropic rule.
    NotAnthropic,
    /// A PEM-armoured private key: the base64 body must be long and varied enough.
    PrivateKey,
    /// `user:password` in a URL or a command line: the password must not be a placeholder or
    /// equal the user; `user:x-oauth-basic` reports the user (a token) instead.
    Credentials,
    /// `name = value` with a credential-like name: the value must look like a secret, not code
    /// (a variable, a dotted path, a URL, a boolean).
    Assignment,
    /// Like `Token`, and the characters just before and after the span must not continue a token
    /// (for shapes with no fixed prefix, where a regex word boundary does not fit).
    Guarded,
    /// A user rule: reported as matched, no checks.
    User,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Token => "token",
            Kind::NotAnthropic => "not_anthropic",
            Kind::PrivateKey => "private_key",
            Kind::Credentials => "credentials",
            Kind::Assignment => "assignment",
            Kind::Guarded => "guarded",
            Kind::User => "user",
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
}

const fn c(kind: Kind, min_classes: u8, min_distinct: u8) -> Check {
    Check {
        kind,
        min_classes,
        min_distinct,
    }
}

const TOKEN: Check = c(Kind::Token, 2, 5);

/// Built-in rules, most specific first: when two rules report the same span the earlier wins.
pub const BUILTIN: &[BuiltinRule] = &[
    BuiltinRule {
        id: "private-key",
        description: "PEM-armoured private key (RSA, EC, DSA, OpenSSH, PKCS#8, encrypted, PGP)",
        pattern: r#"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?P<body>(?:(?:Proc-Type|DEK-Info|Version|Comment|Hash): ?[^\r\n\\]{0,200}|[A-Za-z0-9+/= \t\r\n]|\\[rn])*)(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?"#,
        check: c(Kind::PrivateKey, 2, 10),
    },
    BuiltinRule {
        id: "anthropic-api-key",
        description: "Anthropic API key (sk-ant-…)",
        pattern: r#"(?-u:\b)sk-ant-(?P<body>[A-Za-z0-9_-]{20,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "openai-api-key",
        description: "OpenAI-style secret key (sk-…, sk-proj-…, sk-svcacct-…, sk-admin-…)",
        pattern: r#"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_-]{20,})"#,
        check: c(Kind::NotAnthropic, 2, 5),
    },
    BuiltinRule {
        id: "github-token",
        description: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_)",
        pattern: r#"(?-u:\b)gh[pousr]_(?P<body>[A-Za-z0-9_]{30,})(?:\.[A-Za-z0-9_-]{8,}){0,2}"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "github-fine-grained-pat",
        description: "GitHub fine-grained personal access token (github_pat_…)",
        pattern: r#"(?-u:\b)github_pat_(?P<body>[A-Za-z0-9_]{40,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "gitlab-token",
        description: "GitLab token (glpat-, gldt-, glptt-, glrt-, … and GR1348941 runner registration)",
        pattern: r#"(?-u:\b)(?:gl(?:pat|dt|ptt|rt|rtr|cbt|oas|soat|ft|imt|agent|ffct)-|GR1348941)(?P<body>[A-Za-z0-9_.-]{20,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "stripe-key",
        description: "Stripe secret, restricted or live publishable key (sk_live_, rk_live_, sk_test_, rk_test_, pk_live_)",
        pattern: r#"(?-u:\b)(?:(?:sk|rk)_(?:live|test)|pk_live)_(?P<body>[A-Za-z0-9]{16,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "stripe-webhook-secret",
        description: "Stripe webhook signing secret (whsec_…)",
        pattern: r#"(?-u:\b)whsec_(?P<body>[A-Za-z0-9+/=]{24,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "aws-access-key-id",
        description: "AWS access key id (AKIA…, ASIA…, ABIA…, ACCA…)",
        pattern: r#"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])(?P<body>[A-Z2-7]{16})(?-u:\b)"#,
        check: c(Kind::Token, 1, 5),
    },
    BuiltinRule {
        id: "aws-secret-access-key",
        description: "AWS secret access key assigned to aws_secret_access_key (or similar)",
        pattern: r#"(?i-u:secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key|aws[_-]?secret)["']?[ \t]{0,4}(?:=>|:=|=|:)[ \t]{0,4}["']?(?P<secret>[A-Za-z0-9/+]{40})"#,
        check: c(Kind::Guarded, 2, 10),
    },
    BuiltinRule {
        id: "authorization-header",
        description: "Authorization header value (Bearer, Basic, Token, … or a bare credential)",
        pattern: r#"(?i-u:proxy-authorization|authorization)["']?[ \t]{0,4}[:=][ \t]{0,4}["']?(?:(?i-u:bearer|basic|token|digest|bot|api-key|apikey|api-token|sso-key|negotiate|ntlm)[ \t]{1,4})?(?P<secret>[A-Za-z0-9._~+/=@-]{8,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "bearer-token",
        description: "Bearer token outside an Authorization header",
        pattern: r#"(?-u:\b)(?i-u:bearer)[ \t]{1,4}(?P<secret>[A-Za-z0-9._~+/=-]{16,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "jwt",
        description: "JSON Web Token (three base64url segments, header and payload JSON)",
        pattern: r#"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "slack-token",
        description: "Slack token (xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr-, xoxe-, xapp-; a numeric segment first)",
        pattern: r#"(?-u:\b)(?:xox[abposer]|xoxe\.xox[bp]|xapp)-(?P<body>[0-9]{1,20}-[A-Za-z0-9-]{8,})"#,
        check: c(Kind::Token, 1, 5),
    },
    BuiltinRule {
        id: "slack-webhook",
        description: "Slack incoming webhook or workflow URL",
        pattern: r#"(?i-u:https?://hooks\.slack\.com/(?:services|workflows|triggers)/)(?P<body>[A-Za-z0-9_/+-]{20,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "discord-webhook",
        description: "Discord webhook URL",
        pattern: r#"(?i-u:https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/)[0-9]{5,30}/(?P<body>[A-Za-z0-9_-]{60,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "google-api-key",
        description: "Google API key (AIza…)",
        pattern: r#"(?-u:\b)AIza(?P<body>[A-Za-z0-9_-]{35})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "google-oauth-client-secret",
        description: "Google OAuth client secret (GOCSPX-…)",
        pattern: r#"(?-u:\b)GOCSPX-(?P<body>[A-Za-z0-9_-]{28})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "npm-token",
        description: "npm access token (npm_…)",
        pattern: r#"(?-u:\b)npm_(?P<body>[A-Za-z0-9]{36})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "pypi-token",
        description: "PyPI upload token (pypi-AgE…)",
        pattern: r#"(?-u:\b)pypi-(?P<body>AgE[A-Za-z0-9_-]{50,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "twilio-key",
        description: "Twilio API key or account SID (SK/AC + 32 hex)",
        pattern: r#"(?-u:\b)(?:SK|AC)(?P<body>[0-9a-f]{32})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "sendgrid-api-key",
        description: "SendGrid API key (SG.x.y)",
        pattern: r#"(?-u:\b)SG\.(?P<body>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "azure-connection-string",
        description: "Azure storage / Service Bus key in a connection string (AccountKey=, SharedAccessKey=)",
        pattern: r#"(?i-u:accountkey|sharedaccesskey)=(?P<secret>[A-Za-z0-9+/]{20,}={0,2})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "azure-sas-signature",
        description: "Azure shared access signature (sig= in a SAS URL or token)",
        pattern: r#"[?&;](?i-u:sig)=(?P<secret>[A-Za-z0-9%+/]{30,}={0,2})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "azure-ad-client-secret",
        description: "Azure AD (Entra ID) application client secret (…Q~…)",
        pattern: r#"(?P<secret>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})"#,
        check: c(Kind::Guarded, 2, 10),
    },
    BuiltinRule {
        id: "1password-service-account-token",
        description: "1Password service account token (ops_eyJ…)",
        pattern: r#"(?-u:\b)ops_(?P<body>eyJ[A-Za-z0-9+/_=-]{100,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "age-secret-key",
        description: "age encryption secret key",
        pattern: r#"AGE-SECRET-KEY-1(?P<body>[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58})"#,
        check: c(Kind::Token, 1, 10),
    },
    BuiltinRule {
        id: "atlassian-api-token",
        description: "Atlassian API token (ATATT3…)",
        pattern: r#"(?-u:\b)ATATT3(?P<body>[A-Za-z0-9_=-]{150,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "cloudflare-api-token",
        description: "Cloudflare API token or key (cfat_, cfut_, cfk_)",
        pattern: r#"(?-u:\b)(?:cfat|cfut|cfk)_(?P<body>[A-Za-z0-9]{40}[a-f0-9]{8})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "databricks-token",
        description: "Databricks personal access token (dapi…)",
        pattern: r#"(?-u:\b)dapi(?P<body>[a-fA-F0-9]{32}(?:-[0-9]{1,3})?)(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "digitalocean-token",
        description: "DigitalOcean token (dop_v1_, doo_v1_, dor_v1_)",
        pattern: r#"(?-u:\b)do[por]_v1_(?P<body>[a-f0-9]{64})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "docker-pat",
        description: "Docker Hub personal access token (dckr_pat_…)",
        pattern: r#"(?-u:\b)dckr_pat_(?P<body>[A-Za-z0-9_-]{27,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "doppler-token",
        description: "Doppler token (dp.st., dp.ct., dp.sa., …)",
        pattern: r#"(?-u:\b)dp\.(?:st|ct|sa|scim|audit)\.(?P<body>[A-Za-z0-9_-]{40,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "facebook-access-token",
        description: "Facebook/Meta access token (EAA…) or app token (id|secret)",
        pattern: r#"(?-u:\b)(?:EAA(?P<body>[A-Za-z0-9]{90,})|[0-9]{15,16}\|[A-Za-z0-9_-]{27}(?-u:\b))"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "figma-token",
        description: "Figma personal access token (figd_…)",
        pattern: r#"(?-u:\b)figd_(?P<body>[A-Za-z0-9_-]{40,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "flyio-token",
        description: "Fly.io access token (fo1_…)",
        pattern: r#"(?-u:\b)fo1_(?P<body>[A-Za-z0-9_-]{39,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "grafana-token",
        description: "Grafana Cloud or service account token (glc_, glsa_)",
        pattern: r#"(?-u:\b)(?:glc|glsa)_(?P<body>[A-Za-z0-9_+/=-]{32,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "groq-api-key",
        description: "Groq API key (gsk_…)",
        pattern: r#"(?-u:\b)gsk_(?P<body>[A-Za-z0-9]{52})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "hashicorp-vault-token",
        description: "HashiCorp Vault token (hvs., hvb., hvr.)",
        pattern: r#"(?-u:\b)hv[sbr]\.(?P<body>[A-Za-z0-9_-]{24,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "hashicorp-vault-legacy-token",
        description: "HashiCorp Vault legacy service token (s. + 24 characters)",
        pattern: r#"(?-u:\b)s\.(?P<body>[A-Za-z0-9]{24})(?-u:\b)"#,
        check: c(Kind::Token, 3, 10),
    },
    BuiltinRule {
        id: "huggingface-token",
        description: "Hugging Face access token (hf_…, api_org_…)",
        pattern: r#"(?-u:\b)(?:hf|api_org)_(?P<body>[A-Za-z]{34})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "linear-api-key",
        description: "Linear API key (lin_api_…)",
        pattern: r#"(?-u:\b)lin_(?:api|oauth)_(?P<body>[A-Za-z0-9]{40})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "mailchimp-api-key",
        description: "Mailchimp API key (32 hex + -usN)",
        pattern: r#"(?-u:\b)(?P<body>[0-9a-f]{32})-us[0-9]{1,2}(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "mailgun-api-key",
        description: "Mailgun API key (key-…)",
        pattern: r#"(?-u:\b)key-(?P<body>[0-9a-f]{32})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "newrelic-key",
        description: "New Relic user API key (NRAK-…)",
        pattern: r#"(?-u:\b)NRAK-(?P<body>[A-Z0-9]{27})(?-u:\b)"#,
        check: c(Kind::Token, 1, 5),
    },
    BuiltinRule {
        id: "notion-token",
        description: "Notion integration token (ntn_…)",
        pattern: r#"(?-u:\b)ntn_(?P<body>[0-9]{11}[A-Za-z0-9]{35})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "openshift-token",
        description: "OpenShift user token (sha256~…)",
        pattern: r#"(?-u:\b)sha256~(?P<body>[A-Za-z0-9_-]{43})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "perplexity-api-key",
        description: "Perplexity API key (pplx-…)",
        pattern: r#"(?-u:\b)pplx-(?P<body>[A-Za-z0-9]{48})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "postman-api-key",
        description: "Postman API key (PMAK-…)",
        pattern: r#"(?-u:\b)PMAK-(?P<body>[a-f0-9]{24}-[a-f0-9]{34})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "pulumi-token",
        description: "Pulumi access token (pul-…)",
        pattern: r#"(?-u:\b)pul-(?P<body>[a-f0-9]{40})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "replicate-token",
        description: "Replicate API token (r8_…)",
        pattern: r#"(?-u:\b)r8_(?P<body>[A-Za-z0-9]{37})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "sentry-token",
        description: "Sentry organisation or user auth token (sntrys_, sntryu_)",
        pattern: r#"(?-u:\b)sntry[su]_(?P<body>[A-Za-z0-9_+/=-]{40,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "shopify-token",
        description: "Shopify app secret or access token (shpss_, shpat_, shpca_, shppa_)",
        pattern: r#"(?-u:\b)shp(?:ss|at|ca|pa)_(?P<body>[A-Za-z0-9]{32,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "sourcegraph-token",
        description: "Sourcegraph access token (sgp_…)",
        pattern: r#"(?-u:\b)sgp_(?:[A-Fa-f0-9]{16}_|local_)?(?P<body>[A-Fa-f0-9]{40})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "square-token",
        description: "Square access token or OAuth secret (EAAA…, sq0atp-, sq0csp-)",
        pattern: r#"(?-u:\b)(?:EAAA|sq0atp-|sq0csp-)(?P<body>[A-Za-z0-9_-]{22,60})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "tailscale-key",
        description: "Tailscale API or auth key (tskey-…)",
        pattern: r#"(?-u:\b)tskey-[a-z]{2,12}-(?P<body>[A-Za-z0-9]{6,}-[A-Za-z0-9]{10,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "telegram-bot-token",
        description: "Telegram bot token (id:AA…)",
        pattern: r#"(?-u:\b)[0-9]{8,10}:AA(?P<body>[A-Za-z0-9_-]{33})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "vercel-token",
        description: "Vercel token (vcp_, vci_, vca_, vcr_, vck_)",
        pattern: r#"(?-u:\b)vc[pikar]_(?P<body>[A-Za-z0-9]{24,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "xai-api-key",
        description: "xAI API key (xai-…)",
        pattern: r#"(?-u:\b)xai-(?P<body>[A-Za-z0-9]{70,})"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "clojars-token",
        description: "Clojars deploy token (CLOJARS_…)",
        pattern: r#"(?-u:\b)CLOJARS_(?P<body>[a-z0-9]{60})(?-u:\b)"#,
        check: TOKEN,
    },
    BuiltinRule {
        id: "connection-string",
        description: "Database or broker URL with an embedded password (postgres, mysql, mongodb+srv, redis, amqp, …)",
        pattern: r#"(?-u:\b)(?i-u:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|cockroachdb|clickhouse|couchdb|neo4j(?:\+s)?|bolt|nats|kafka|memcached|cassandra|influxdb|elasticsearch)://(?P<user>[^:@/ \t\r\n"'<>]{0,128}):(?P<secret>[^ \t\r\n"'/<>]{1,256})@[^ \t\r\n"'<>@/]"#,
        check: c(Kind::Credentials, 1, 4),
    },
    BuiltinRule {
        id: "url-credentials",
        description: "URL with user:password before the host (http, ftp, ssh, git, ldap, smtp, …)",
        pattern: r#"(?-u:\b)(?i-u:git\+https?|git\+ssh|https?|ftps?|sftp|ssh|git|svn|smb|wss?|ldaps?|smtps?|imaps?|pop3s?|rtsp|socks5h?)://(?P<user>[^:@/ \t\r\n"'<>]{0,128}):(?P<secret>[^ \t\r\n"'/<>]{1,256})@[^ \t\r\n"'<>@/]"#,
        check: c(Kind::Credentials, 1, 4),
    },
    BuiltinRule {
        id: "cli-user-password",
        description: "user:password given to a command line (-u / --user, as curl takes it)",
        pattern: r#"(?:[ \t]-u[ \t]{0,4}|--user[ \t]{1,4}|--user=)["']?(?P<user>[^ \t\r\n"':]{0,64})["']?:["']?(?P<secret>[^ \t\r\n"']{3,128})"#,
        check: c(Kind::Credentials, 2, 5),
    },
    BuiltinRule {
        id: "generic-secret-assignment",
        description: "A credential-named key given a value: api_key|token|password|secret … = value (also :, =>, JSON and YAML forms)",
        pattern: r#"(?i-u:(?:api|access|secret|private|client|app|account|master|encryption|signing|session|service)[_-]?key|api[_-]?secret|apikey|token|secret|passw(?:or)?d|passphrase|pwd|pass|credentials?|auth)["']?[ \t]{0,4}(?:=>|:=|=|:|>)[ \t]{0,4}["'\x60]?(?P<secret>[^ \t\r\n"'\x60,;<>(){}\[\]\\]{6,})"#,
        check: c(Kind::Assignment, 2, 5),
    },
];
