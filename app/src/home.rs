//! The landing page at `/`: what this server is and what to do next.

use leptos::prelude::*;

/// What the landing page shows.
#[derive(Debug, Clone)]
pub struct HomeView {
    pub version: &'static str,
    pub public_url: String,
}

const STYLE: &str = "body{font:16px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;\
background:#f8fafc;color:#0f172a}main{max-width:40rem;margin:4rem auto;padding:0 1.5rem}\
h1{font-size:1.75rem;margin:0 0 .5rem}code,pre{font:14px ui-monospace,Menlo,Consolas,monospace;\
background:#e2e8f0;border-radius:6px}code{padding:.1rem .35rem}pre{padding:1rem;overflow-x:auto}\
.muted{color:#475569}";

#[component]
fn HomePage(view: HomeView) -> impl IntoView {
    let command = format!(
        "porch site add --name \"My site\" --origin https://www.example.com --public-url {}",
        view.public_url
    );
    view! {
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <title>"Porch"</title>
                <style>{STYLE}</style>
            </head>
            <body>
                <main>
                    <h1>"Porch is running"</h1>
                    <p class="muted">"Version " {view.version}</p>
                    <p>"Create a site and paste the snippet it prints into your pages:"</p>
                    <pre><code>{command}</code></pre>
                    <p>"The admin inbox arrives in a later release."</p>
                </main>
            </body>
        </html>
    }
}

/// Renders the landing page as a complete HTML document.
pub fn render_home(view: HomeView) -> String {
    let html = view! { <HomePage view/> }.to_html();
    format!("<!DOCTYPE html>{html}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_it_is_given() {
        let html = render_home(HomeView {
            version: "1",
            public_url: "http://x/<b>".into(),
        });
        assert!(html.starts_with("<!DOCTYPE html><html"));
        assert!(html.contains("http://x/&lt;b&gt;"));
    }
}
