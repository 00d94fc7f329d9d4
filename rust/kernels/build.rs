//! Build-time data for the kernels. Each kernel that needs generated data keeps its generator
//! in `build/<kernel>.rs`.

#[path = "build/tokens.rs"]
mod tokens;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    tokens::generate();
}
