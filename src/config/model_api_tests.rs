#![expect(clippy::unwrap_used, reason = "tests")]
use crate::config::Config;
use crate::llm::budget::OnSpent;

fn errors(yaml: &str) -> Vec<String> {
    match Config::parse("t.yaml", yaml) {
        Ok(_) => Vec::new(),
        Err(e) => e.to_string().lines().map(str::to_owned).collect(),
    }
}

#[test]
fn every_bad_field_of_a_model_api_is_named_at_its_path() {
    let errs = errors(
        "model_prices:\n  gpt-4o: { input: cheap, output: -1 }\n  claude: { input: 3 }\n  \"[\": { input: 1, output: 1 }\n\
         policies:\n  p:\n    allow:\n      - host: a.example\n        model_api: { dialect: gemini }\n      \
         - host: b.example\n        model_api: { models: [x] }\n      - host: c.example\n        tls: tunnel\n        \
         model_api: { dialect: openai }\n      - host: d.example\n        model_api: { dialect: openai, models: [] }\n      \
         - host: e.example\n        model_api: { dialect: openai, models: [ok, \"no way\"] }\n      - host: f.example\n        \
         mcp: { tools: [a] }\n        model_api: { dialect: openai }\n    model_budget:\n      \
         sandbox: { tokens: 0, cost: 0, per: soon }\n      user: { per: 1h }\n      on_spent: wait\n",
    );
    for needle in [
        "model_prices.gpt-4o.input: expected a number such as 0.15, not \"cheap\"",
        "model_prices.gpt-4o.output: -1 is not a price",
        "model_prices.claude: needs both input and output",
        "model_prices.[:",
        "policies.p.allow[0].model_api.dialect: \"gemini\" is not a dialect cordon reads",
        "policies.p.allow[1].model_api.dialect: is missing",
        "policies.p.allow[2].model_api: `model_api` needs to read each request and answer",
        "policies.p.allow[3].model_api.models[0]: is empty",
        "policies.p.allow[4].model_api.models[1]:",
        "policies.p.allow[5].model_api: a rule judges one protocol",
        "policies.p.model_budget.sandbox.tokens: 0 must be at least 1",
        "policies.p.model_budget.sandbox.cost: 0 must be more than 0",
        "policies.p.model_budget.sandbox.per:",
        "policies.p.model_budget.user: limits nothing; give tokens, cost or both",
        "policies.p.model_budget.on_spent: \"wait\" is not what a spent budget can do",
    ] {
        assert!(errs.iter().any(|e| e.contains(needle)), "{needle}: {errs:#?}");
    }
}

#[test]
fn a_cost_budget_needs_prices() {
    let errs = errors("policies:\n  p:\n    allow: []\n    model_budget: { sandbox: { cost: 1.5 } }\n");
    assert!(
        errs.iter()
            .any(|e| e.contains("policies.p.model_budget: limits cost, but `model_prices:` prices no model")),
        "{errs:#?}"
    );
}

#[test]
fn a_model_api_reads_as_written() {
    let c = Config::parse(
        "t.yaml",
        "model_prices:\n  \"gpt-4o-mini*\": { input: 0.15, output: 0.6, cached_input: 0.075 }\npolicies:\n  p:\n    \
         allow:\n      - host: api.openai.com\n        model_api: { dialect: openai, models: [gpt-4o-mini] }\n    \
         model_budget:\n      sandbox: { tokens: 1000, per: 1h }\n      user: { cost: 2.5 }\n      on_spent: ask\n",
    )
    .unwrap();
    let rule = &c.policies["p"].rules[0];
    let m = rule.model_api.as_ref().unwrap();
    assert!(m.allows("gpt-4o-mini") && !m.allows("gpt-4o"));
    let b = c.model_budgets.of("p+own").unwrap();
    assert_eq!(b.on_spent, OnSpent::Ask);
    assert_eq!(b.sandbox.unwrap().tokens, Some(1000));
    assert_eq!(b.sandbox.unwrap().window.as_secs(), 3600);
    assert_eq!(b.user.unwrap().cost, Some(2_500_000));
    assert_eq!(b.user.unwrap().window.as_secs(), 86_400);
    assert_eq!(
        c.model_prices.of("gpt-4o-mini-2024-07-18").unwrap().1.cached_input,
        Some(0.075)
    );
}
