//! The citation files agree with the crate: `CITATION.cff`'s version and licences are
//! `Cargo.toml`'s, both licence texts are present, every reference names its authors, and the
//! README's BibTeX keeps the group author whole (`{{...}}`: BibTeX would read a single-braced
//! "The normscope developers" as a person with the last name "developers").

use std::fs;

fn read(path: &str) -> String {
    fs::read_to_string(format!("{}/{path}", env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn citation_file_matches_the_crate() {
    let cff = read("CITATION.cff");
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(
        cff.matches(&format!("version: {version}")).count(),
        2,
        "CITATION.cff's version and its preferred citation's must be {version}"
    );
    // `license = "MIT OR Apache-2.0"` in Cargo.toml.
    assert!(read("Cargo.toml").contains("license = \"MIT OR Apache-2.0\""));
    assert!(cff.contains("license: [MIT, Apache-2.0]"));
    assert!(read("LICENSE-MIT").starts_with("MIT License"));
    assert!(read("LICENSE-APACHE").contains("Apache License\n                        Version 2.0"));
    assert!(read("LICENSE").contains("LICENSE-MIT") && read("LICENSE").contains("LICENSE-APACHE"));
}

#[test]
fn every_reference_lists_its_authors() {
    let cff = read("CITATION.cff");
    let refs = cff.split("references:").nth(1).expect("references");
    for entry in refs.split("\n  - type: ").skip(1) {
        let title = entry.lines().find(|l| l.trim_start().starts_with("title:"));
        let authors = entry.matches("family-names:").count();
        assert!(authors >= 1, "{title:?} has no author");
        assert!(entry.contains("year: "), "{title:?} has no year");
    }
    // Papers with more than one author list them all (a few checked against their pages).
    for (title, n) in [
        ("Attention Is All You Need", 8),
        ("Peri-LN", 10),
        ("The Curse of Depth", 6),
        ("A Mean Field Theory of Batch Normalization", 5),
        ("Transformers without Normalization", 5),
    ] {
        let entry = refs
            .split("\n  - type: ")
            .find(|e| e.contains(title))
            .unwrap_or_else(|| panic!("{title}"));
        assert_eq!(entry.matches("family-names:").count(), n, "{title}");
    }
}

#[test]
fn the_readme_bibtex_keeps_the_group_author_whole() {
    let readme = read("README.md");
    let bib = readme
        .split("```bibtex")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a BibTeX block in README.md");
    assert!(
        bib.contains("author  = {{The normscope developers}}"),
        "{bib}"
    );
    assert!(bib.contains(&format!("version = {{{}}}", env!("CARGO_PKG_VERSION"))));
}
