#![expect(clippy::unwrap_used, reason = "tests")]
use super::*;

fn price(input: f64, output: f64) -> Price {
    Price {
        input,
        output,
        cached_input: None,
        cache_write: None,
    }
}

#[test]
fn the_most_specific_entry_prices_a_model() {
    let mut t = PriceTable::default();
    t.add("gpt-4o*", price(2.5, 10.0)).unwrap();
    t.add("gpt-4o-mini*", price(0.15, 0.6)).unwrap();
    t.add("gpt-4o-mini", price(0.1, 0.5)).unwrap();
    assert_eq!(t.of("gpt-4o-mini").map(|p| p.0), Some("gpt-4o-mini"));
    assert_eq!(t.of("gpt-4o-mini-2024-07-18").map(|p| p.0), Some("gpt-4o-mini*"));
    assert_eq!(t.of("gpt-4o-2024-08-06").map(|p| p.0), Some("gpt-4o*"));
    assert_eq!(t.of("o3"), None);
    assert!(t.add("[", price(1.0, 1.0)).is_err());
}

#[test]
fn cost_is_in_millionths_and_rounded_up() {
    let p = Price {
        input: 3.0,
        output: 15.0,
        cached_input: Some(0.3),
        cache_write: Some(3.75),
    };
    let u = Usage {
        input: 1000,
        output: 100,
        cached_input: 200,
        cache_write: 100,
        estimated: false,
    };
    // 700 × 3 + 200 × 0.3 + 100 × 3.75 + 100 × 15 = 2100 + 60 + 375 + 1500
    assert_eq!(p.cost(&u), 4035);
    assert_eq!(
        price(0.15, 0.6).cost(&Usage {
            input: 1,
            ..Usage::default()
        }),
        1
    );
    assert_eq!(price(0.0, 0.0).cost(&u), 0);
}
