use super::*;
use serde_json::json;

#[test]
fn every_openai_answer_shape_reads() {
    let chat = json!({"usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17,
        "prompt_tokens_details": {"cached_tokens": 4}}});
    assert_eq!(
        of_answer(Dialect::Openai, &chat),
        Some(Usage {
            input: 12,
            output: 5,
            cached_input: 4,
            ..Usage::default()
        })
    );
    let responses = json!({"usage": {"input_tokens": 9, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 2},
        "output_tokens_details": {"reasoning_tokens": 1}}});
    assert_eq!(
        of_answer(Dialect::Openai, &responses),
        Some(Usage {
            input: 9,
            output: 3,
            cached_input: 2,
            ..Usage::default()
        })
    );
    let embeddings = json!({"usage": {"prompt_tokens": 8, "total_tokens": 8}});
    assert_eq!(
        of_answer(Dialect::Openai, &embeddings),
        Some(Usage {
            input: 8,
            ..Usage::default()
        })
    );
    // A cached count larger than the input cannot make the fresh input negative.
    let odd = json!({"usage": {"prompt_tokens": 2, "prompt_tokens_details": {"cached_tokens": 9}}});
    assert_eq!(of_answer(Dialect::Openai, &odd).map(|u| u.cached_input), Some(2));
    for none in [
        json!({}),
        json!({"usage": null}),
        json!({"usage": {"prompt_tokens": "12"}}),
        json!([1]),
    ] {
        assert_eq!(of_answer(Dialect::Openai, &none), None, "{none}");
    }
}

#[test]
fn anthropic_counts_its_cache_as_input() {
    let m = json!({"usage": {"input_tokens": 10, "output_tokens": 7, "cache_read_input_tokens": 5,
        "cache_creation_input_tokens": 3}});
    assert_eq!(
        of_answer(Dialect::Anthropic, &m),
        Some(Usage {
            input: 18,
            output: 7,
            cached_input: 5,
            cache_write: 3,
            estimated: false
        })
    );
}

#[test]
fn an_openai_stream_is_counted_by_its_usage_chunk_or_estimated_from_its_deltas() {
    let mut t = StreamTally::new(Dialect::Openai);
    for _ in 0..3 {
        t.event(r#"{"choices":[{"delta":{"content":"w "}}]}"#);
    }
    t.event(r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3}}"#);
    t.event("[DONE]");
    assert_eq!(
        t.finish(99),
        Usage {
            input: 4,
            output: 3,
            ..Usage::default()
        }
    );
    // Cut short, or never asked for usage: what was delivered, and the request's estimate.
    let mut t = StreamTally::new(Dialect::Openai);
    t.event(r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#);
    t.event(r#"{"choices":[{"delta":{"content":"a"}}]}"#);
    t.event(r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#);
    t.event("not json");
    assert_eq!(
        t.finish(10),
        Usage {
            input: 10,
            output: 2,
            estimated: true,
            ..Usage::default()
        }
    );
}

#[test]
fn a_responses_stream_is_counted_by_its_completed_event() {
    let mut t = StreamTally::new(Dialect::Openai);
    t.event(r#"{"type":"response.created","response":{"usage":null}}"#);
    t.event(r#"{"type":"response.output_text.delta","delta":"x"}"#);
    t.event(r#"{"type":"response.completed","response":{"usage":{"input_tokens":6,"output_tokens":1}}}"#);
    assert_eq!(
        t.finish(0),
        Usage {
            input: 6,
            output: 1,
            ..Usage::default()
        }
    );
    let mut cut = StreamTally::new(Dialect::Openai);
    cut.event(r#"{"type":"response.output_text.delta","delta":"x"}"#);
    cut.event(r#"{"type":"response.output_text.delta","delta":"y"}"#);
    assert_eq!(
        cut.finish(5),
        Usage {
            input: 5,
            output: 2,
            estimated: true,
            ..Usage::default()
        }
    );
}

#[test]
fn an_anthropic_stream_cut_short_keeps_its_input_and_what_was_delivered() {
    let start = r#"{"type":"message_start","message":{"usage":{"input_tokens":11,"output_tokens":1,"cache_read_input_tokens":2}}}"#;
    let mut t = StreamTally::new(Dialect::Anthropic);
    t.event(start);
    for _ in 0..4 {
        t.event(r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"w"}}"#);
    }
    t.event(r#"{"type":"message_delta","usage":{"output_tokens":4}}"#);
    t.event(r#"{"type":"message_stop"}"#);
    assert_eq!(
        t.finish(0),
        Usage {
            input: 13,
            output: 4,
            cached_input: 2,
            ..Usage::default()
        }
    );
    let mut cut = StreamTally::new(Dialect::Anthropic);
    cut.event(start);
    for _ in 0..6 {
        cut.event(r#"{"type":"content_block_delta","delta":{"type":"text_delta","text":"w"}}"#);
    }
    assert_eq!(
        cut.finish(99),
        Usage {
            input: 13,
            output: 6,
            cached_input: 2,
            estimated: true,
            ..Usage::default()
        }
    );
    // Nothing at all: the request's estimate, and no output.
    assert_eq!(
        StreamTally::new(Dialect::Anthropic).finish(7),
        Usage {
            input: 7,
            estimated: true,
            ..Usage::default()
        }
    );
}
