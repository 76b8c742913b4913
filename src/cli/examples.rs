//! The `Examples:` block of every command's `--help` (and the EXAMPLES section of its manual page): commands
//! that work against the embedded configuration (config/cordon.yaml: sandbox `demo` with token `demo-token`,
//! policy `default`, proxy on 127.0.0.1:3128, admin API on 127.0.0.1:9090, state in the state folder), each after a
//! `# ` line that says what it does, and each runs as printed: tests/it/cli/examples.rs fails when a visible
//! command has none or a line is run by no test (tests/it/cli/examples*.rs, tests/it/jail/examples.rs).

use clap::Command;
use clap::builder::StyledStr;
use clap::builder::styling::Style;

/// Each command's examples, by its path below `cordon` (`""` is `cordon` itself): `# ` lines say what the
/// command lines after them do; a blank line ends an example.
const EXAMPLES: &[(&str, &str)] = &[
    (
        "",
        "# Start the proxy with the embedded configuration (the same as `cordon run`)
cordon

# Send a request through it as the demo sandbox
curl -x http://demo:demo-token@127.0.0.1:3128 http://example.com/

# What cordon would do with that request, and why, without sending it
cordon explain --sandbox demo http://example.com/",
    ),
    (
        "run",
        "# Run the proxy with the embedded configuration; its state (admin token, keys, store) goes to the state
# folder (~/.local/state/cordon; /var/lib/cordon for root; $CORDON_STATE_DIR)
cordon run

# Keep the audit lines (stdout) in a file, and the operational log (stderr) as JSON at debug level
CORDON_LOG=debug CORDON_LOG_FORMAT=json cordon run > audit.jsonl",
    ),
    (
        "check",
        "# Validate the embedded configuration and print what it sets up
cordon check

# The same summary as JSON, and each credential that needs the network asked for its value once
cordon check --json --probe

# Validate your own copy before you start it, its warnings counted as errors (as in CI)
cordon check --strict --config cordon.yaml",
    ),
    (
        "explain",
        "# Would the demo sandbox reach example.com? (exit 0 allowed, 1 refused)
cordon explain --sandbox demo http://example.com/

# A method the policy does not allow there, as JSON
cordon explain --sandbox demo --method POST --json https://api.github.com/repos/acme/app/issues",
    ),
    (
        "policy",
        "# Learn the demo sandbox's policy from what a run in report mode recorded (audit.jsonl)
cordon policy suggest --sandbox demo audit.jsonl",
    ),
    (
        "policy diff",
        "# What the policy in narrow.yaml (a file of `allow:` rules) would add to the embedded `default` policy
# (exit 0 nothing, 1 something, each with a request that shows it)
cordon policy diff default narrow.yaml

# And the other way round, as JSON
cordon policy diff --json narrow.yaml default",
    ),
    (
        "policy contains",
        "# Prove that the embedded `default` policy allows everything narrow.yaml (a file of `allow:` rules) allows
# (exit 0), or print a request that shows it does not (exit 1)
cordon policy contains default narrow.yaml",
    ),
    (
        "policy suggest",
        "# The narrowest policy that would have allowed what the demo sandbox did, as a `policies:` section
cordon policy suggest --sandbox demo audit.jsonl

# Paths cut to their first two segments (each then /** below), as JSON
cordon policy suggest --sandbox demo --paths 2 --json audit.jsonl",
    ),
    (
        "audit",
        "# The key that verifies the audit log (state/audit-key is made on cordon's first start)
cordon audit public-key

# Verify the audit lines a run wrote
cordon audit verify --public-key \"$(cordon audit public-key)\" audit.jsonl",
    ),
    (
        "audit public-key",
        "# Print the checkpoints' public key, to keep off the machine
cordon audit public-key

# Keep it in a file
cordon audit public-key > audit-key.pub",
    ),
    (
        "audit verify",
        "# Verify the audit lines `cordon run > audit.jsonl` wrote: the chain and the checkpoints' signatures
cordon audit verify --public-key \"$(cordon audit public-key)\" audit.jsonl

# Rotated files too, in any order; the result as JSON
cordon audit verify --public-key \"$(cat audit-key.pub)\" --json audit.jsonl audit.jsonl.1.gz

# The hash chain alone, without a key
cordon audit verify --no-signatures audit.jsonl",
    ),
    (
        "ca",
        "# The demo sandbox's CA certificate, for its trust store
cordon ca export --sandbox demo > demo-ca.pem

# Replace it with a new one
cordon ca rotate --sandbox demo > demo-ca.pem",
    ),
    (
        "ca export",
        "# The demo sandbox's CA certificate (made on first use, under certs/ in the state folder)
cordon ca export --sandbox demo > demo-ca.pem",
    ),
    (
        "ca rotate",
        "# A new CA for the demo sandbox; give the sandbox the certificate it prints
cordon ca rotate --sandbox demo > demo-ca.pem",
    ),
    (
        "vault",
        "# Store a secret read from stdin, list the names, remove it
printf %s \"$GITHUB_TOKEN\" | cordon vault set github
cordon vault list
cordon vault rm github",
    ),
    (
        "vault set",
        "# Store a secret under the name credentials refer to (`source: { vault: github }`)
printf %s \"$GITHUB_TOKEN\" | cordon vault set github",
    ),
    (
        "vault list",
        "# The names of the stored secrets, one a line
cordon vault list

# As JSON
cordon vault list --json",
    ),
    (
        "vault rm",
        "# Remove a stored secret
cordon vault rm github",
    ),
    (
        "placeholders",
        "# The placeholders the demo sandbox may use, as NAME=value lines (none: the embedded policy uses no
# credentials)
cordon placeholders --sandbox demo

# As a JSON object
cordon placeholders --sandbox demo --json",
    ),
    (
        "jail",
        "# Without root: a shell that may write only this folder and reach the network only through cordon
cordon jail --project . -- bash

# As root: the gateway jail, the command run as alice with at most 2 GiB of memory for 2 hours
sudo cordon jail --user alice --memory 2GiB --wall 2h -- python3 agent.py

# Remove what a crashed root jail left behind
sudo cordon jail --cleanup",
    ),
    (
        "sandbox",
        "# Create a sandbox for two hours with the running cordon's admin API, list them, revoke it
cordon sandbox create --user alice --policy default --id agent-1 --ttl 2h
cordon sandbox list
cordon sandbox revoke agent-1",
    ),
    (
        "sandbox create",
        "# A sandbox of the default policy for two hours: its credential, CA, placeholders and environment (JSON)
cordon sandbox create --user alice --policy default --id agent-1 --ttl 2h --label task=t-1

# Only its environment, into the shell that starts the agent
eval \"$(cordon sandbox create --user alice --policy default --format export)\"",
    ),
    (
        "sandbox set-policy",
        "# Give agent-1 its own policy from a file (`extends: default` and the rules it keeps)
cordon sandbox set-policy agent-1 --policy-file agent-1-policy.yaml

# Back to the file's policy
cordon sandbox set-policy agent-1 --policy default",
    ),
    (
        "sandbox list",
        "# The sandboxes of the running cordon, as a table
cordon sandbox list

# As JSON
cordon sandbox list --json",
    ),
    (
        "sandbox show",
        "# One sandbox, with its CA certificate (JSON)
cordon sandbox show agent-1",
    ),
    (
        "sandbox renew",
        "# Let agent-1 live four more hours
cordon sandbox renew agent-1 --ttl 4h",
    ),
    (
        "sandbox revoke",
        "# End agent-1 now: its requests get 407, its open connections are closed
cordon sandbox revoke agent-1",
    ),
    (
        "sandbox ca-bundle",
        "# The CA bundle to write at control.ca_file in the sandbox
cordon sandbox ca-bundle agent-1 > ca-bundle.pem",
    ),
    (
        "sandbox preview",
        "# A link for alice to port 3000 of agent-1 (a configuration with previews: and a policy that exposes 3000)
cordon sandbox preview agent-1 --port 3000 --user alice --ttl 15m

# As JSON: the link, when it expires, and the preview's id (to close it early)
cordon sandbox preview agent-1 --port 3000 --user alice --json",
    ),
    (
        "sandbox close-preview",
        "# Close the preview whose id (pv-..., from `cordon sandbox preview --json`) is in $PREVIEW: its link and
# every session opened with it are refused from now on
cordon sandbox close-preview agent-1 \"$PREVIEW\"",
    ),
    (
        "sandbox env",
        "# A further credential for agent-1, as a .env file
cordon sandbox env agent-1 --format dotenv > agent-1.env",
    ),
    (
        "approvals",
        "# The requests held for a decision, then let the oldest through for good
cordon approvals list
cordon approvals allow \"$(cordon approvals list --ids | head -n 1)\" --always",
    ),
    (
        "approvals list",
        "# The requests held for a decision (rules with `action: ask`), oldest first
cordon approvals list

# Only their ids, one a line, oldest first (for scripts)
cordon approvals list --ids

# As JSON
cordon approvals list --json",
    ),
    (
        "approvals allow",
        "# Let the oldest held request through (`cordon approvals list` shows them, oldest first)
cordon approvals allow \"$(cordon approvals list --ids | head -n 1)\"

# The same, and every later request of its sandbox to the same method, host, port and path: a standing grant
cordon approvals allow \"$(cordon approvals list --ids | head -n 1)\" --always",
    ),
    (
        "approvals deny",
        "# Refuse the oldest held request: its client gets 403
cordon approvals deny \"$(cordon approvals list --ids | head -n 1)\"

# Refuse every held request
cordon approvals list --ids | xargs -r -n 1 cordon approvals deny",
    ),
    (
        "approvals grants",
        "# The standing grants `allow --always` and `allow --exact` made
cordon approvals grants

# Only their ids, one a line, oldest first (for scripts)
cordon approvals grants --ids

# As JSON
cordon approvals grants --json",
    ),
    (
        "approvals access",
        "# The access requests sandboxes filed from inside, each with what it would add
cordon approvals access

# Grant the oldest one waiting (it lasts the lifetime it asked for)
cordon approvals allow \"$(cordon approvals access --ids | head -n 1)\"

# As JSON
cordon approvals access --json",
    ),
    (
        "approvals revoke-grant",
        "# Hold the requests the newest grant covered for approval again (`cordon approvals grants` lists them)
cordon approvals revoke-grant \"$(cordon approvals grants --ids | tail -n 1)\"",
    ),
    (
        "reasons",
        "# Every reason code, with the answer the sandbox got and what it means
cordon reasons

# The same table as Markdown, for a wiki or an issue
cordon reasons --markdown

# One code, as `x-cordon-reason` or an audit record's `reason` carries it
cordon reasons no_rule

# As JSON
cordon reasons --json",
    ),
    (
        "completions",
        "# bash, for every user (the folder the bash-completion package reads)
cordon completions bash > /etc/bash_completion.d/cordon

# zsh: a file _cordon in a folder of $fpath (`fpath+=~/.zfunc` in ~/.zshrc, before compinit)
mkdir -p ~/.zfunc
cordon completions zsh > ~/.zfunc/_cordon

# fish
mkdir -p ~/.config/fish/completions
cordon completions fish > ~/.config/fish/completions/cordon.fish",
    ),
    (
        "man",
        "# Read cordon's manual page
cordon man | man -l -

# Install the page of `cordon sandbox create`, for `man cordon-sandbox-create`
mkdir -p /usr/local/share/man/man1
cordon man sandbox create > /usr/local/share/man/man1/cordon-sandbox-create.1",
    ),
    (
        "config",
        "# The JSON Schema of cordon.yaml, beside your configuration for the editor and CI
cordon config schema > cordon.schema.json",
    ),
    (
        "config schema",
        "# Save the schema, then name it in cordon.yaml's first line:
# `# yaml-language-server: $schema=cordon.schema.json`
cordon config schema > cordon.schema.json",
    ),
    (
        "token",
        "# A random sandbox token, kept in a file, and the token_sha256 to put in the configuration
openssl rand -hex 24 | tee token | cordon token hash",
    ),
    (
        "token hash",
        "# The token_sha256 of the demo sandbox's token, as config/cordon.yaml has it
printf %s demo-token | cordon token hash

# A random token, kept in a file, and its hash
openssl rand -hex 24 | tee token | cordon token hash",
    ),
];

/// The examples of the command at `path` (`"sandbox create"`; `""` for `cordon`), as written in [`EXAMPLES`].
pub(super) fn of(path: &str) -> Option<&'static str> {
    let mut all = EXAMPLES.iter().chain(super::credentials::EXAMPLES);
    all.find(|(p, _)| *p == path).map(|(_, text)| *text)
}

/// `cmd` and each of its subcommands with their examples after the help (`after_help`).
pub(super) fn attach(cmd: Command) -> Command {
    attach_at(cmd, "")
}

fn attach_at(mut cmd: Command, path: &str) -> Command {
    if let Some(text) = of(path) {
        cmd = cmd.after_help(block(text));
    }
    let names: Vec<String> = cmd.get_subcommands().map(|s| s.get_name().to_owned()).collect();
    for name in names {
        let below = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd = cmd.mut_subcommand(&name, |sub| attach_at(sub, &below));
    }
    cmd
}

/// The help's block: the heading styled as clap styles its own (shown only where clap shows colour), the
/// lines indented.
fn block(text: &str) -> StyledStr {
    let heading = Style::new().bold().underline();
    let mut out = format!("{heading}Examples:{heading:#}\n");
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str("  ");
            out.push_str(line);
        }
        out.push('\n');
    }
    StyledStr::from(out.trim_end().to_owned())
}

/// One example: what it does (the `# ` lines, joined) and its command lines.
pub(super) struct Example {
    pub(super) what: String,
    pub(super) commands: Vec<&'static str>,
}

/// The examples of `text`, for the manual page.
pub(super) fn parse(text: &'static str) -> Vec<Example> {
    let mut all = Vec::new();
    for chunk in text.split("\n\n") {
        let mut what = Vec::new();
        let mut commands = Vec::new();
        for line in chunk.lines() {
            match line.strip_prefix("# ") {
                Some(said) => what.push(said),
                None => commands.push(line),
            }
        }
        all.push(Example {
            what: what.join(" "),
            commands,
        });
    }
    all
}

/// The paths of `EXAMPLES` no visible command of `cmd` has (`cmd` built), for the unit test.
#[cfg(test)]
pub(super) fn unused(cmd: &Command) -> Vec<&'static str> {
    EXAMPLES
        .iter()
        .map(|(path, _)| *path)
        .filter(|path| {
            let mut at = Some(cmd);
            for word in path.split_whitespace() {
                at = at.and_then(|c| c.find_subcommand(word)).filter(|c| !c.is_hide_set());
            }
            at.is_none()
        })
        .collect()
}

#[cfg(test)]
#[path = "examples_tests.rs"]
mod tests;
