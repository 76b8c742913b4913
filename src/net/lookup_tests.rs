use super::*;

#[test]
fn numbers_are_read_as_the_c_library_reads_them() {
    for (name, ip) in [
        ("2852039166", "169.254.169.254"),
        ("0xa9fea9fe", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("012.0.0.1", "10.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("1.2.3", "1.2.0.3"),
    ] {
        assert_eq!(numeric(name).map(|a| a.to_string()).as_deref(), Some(ip), "{name}");
    }
    for name in ["api.test", "example.com", "1.example", "x2852039166"] {
        assert_eq!(numeric(name), None, "{name}");
    }
}
