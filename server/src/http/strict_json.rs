//! The API's JSON bodies, read as axum's `Json` reads them (the same 415 and 400 refusals), except
//! that a field the endpoint does not take is refused (422 `invalid`, naming it) instead of
//! ignored. Ignoring it turned a typo into a silent success: `{"bot_tokn": …}` in a token rotation
//! answered 200 and kept the old token, and a misspelled email delay saved the default.

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::ApiError;

/// A JSON body of type `T` with no field `T` does not know, and no key given twice in an object.
pub struct StrictJson<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for StrictJson<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        refuse_encoded(&request).map_err(IntoResponse::into_response)?;
        let Json(Unique(value)) = Json::<Unique>::from_request(request, state).await.map_err(
            |rejection| match rejection {
                // A key given twice: the rejection's text names it and where.
                JsonRejection::JsonDataError(err) => {
                    let text = err.body_text();
                    let words = text
                        .strip_prefix("Failed to deserialize the JSON body into the target type: ")
                        .unwrap_or(&text);
                    ApiError::invalid(format!("{} (docs/api.md).", capitalised(words)))
                        .into_response()
                }
                other => other.into_response(),
            },
        )?;
        // Every body the API takes is an object; serde would also read an array as the fields
        // in order, so `["Yes"]` would be a reply.
        if !value.is_object() {
            return Err(
                ApiError::invalid("The body must be a JSON object (docs/api.md).").into_response(),
            );
        }
        let mut unknown = Vec::new();
        let mut note_unknown = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
        let body = serde_path_to_error::deserialize(serde_ignored::Deserializer::new(
            value,
            &mut note_unknown,
        ));
        // A misspelled field is named before the field it then lacks: `{"bdy": …}` is about
        // `bdy`, not a missing `body`.
        if !unknown.is_empty() {
            let (noun, them) = if unknown.len() == 1 {
                ("field", "it")
            } else {
                ("fields", "them")
            };
            return Err(ApiError::invalid(format!(
                "Unknown {noun} {}: this endpoint does not take {them} (docs/api.md).",
                super::strict_query::listed_names(&unknown)
            ))
            .into_response());
        }
        body.map(Self)
            .map_err(|err| ApiError::invalid(misfit(&err)).into_response())
    }
}

/// A body sent compressed (`Content-Encoding: gzip`) is refused as a media type Porch does not
/// take (415), before it is read: parsed as its compressed bytes, it was a misleading 400 "not
/// JSON".
fn refuse_encoded(request: &Request) -> Result<(), ApiError> {
    // Every coding of every `Content-Encoding` header: `identity, gzip` is compressed too.
    let encoded = request
        .headers()
        .get_all(header::CONTENT_ENCODING)
        .iter()
        .flat_map(|value| value.as_bytes().split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .any(|coding| !coding.is_empty() && !coding.eq_ignore_ascii_case(b"identity"));
    if !encoded {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "Porch takes request bodies uncompressed: send this one without Content-Encoding \
         (docs/api.md).",
    ))
}

/// `words` with its first letter in capitals, to start a sentence.
fn capitalised(words: &str) -> String {
    let mut chars = words.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// Why a body does not fit, for people: the field it is about and serde's words, with Rust's
/// integer type names (`expected u32`) said as what they accept. A value of the wrong kind
/// (`1.5`, `"7"`) is told only that it must be a whole number: the type's range is not the
/// field's (`retention_days` takes 1 to 36,500, which its own check says), so naming it would
/// mislead; a whole number beyond the type is told the type's range, the most it can be.
fn misfit(err: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let mut words = err.inner().to_string();
    let is_wrong_kind = words.starts_with("invalid type");
    for (rust, ranged) in [
        ("u8", "a whole number from 0 to 255"),
        ("u16", "a whole number from 0 to 65535"),
        ("u32", "a whole number from 0 to 4294967295"),
        ("u64", "a whole number of 0 or more"),
        ("usize", "a whole number of 0 or more"),
        ("i32", "a whole number"),
        ("i64", "a whole number"),
    ] {
        if let Some(start) = words.strip_suffix(&format!("expected {rust}")) {
            let plain = if is_wrong_kind {
                "a whole number"
            } else {
                ranged
            };
            words = format!("{start}expected {plain}");
        }
    }
    match err.path().to_string().as_str() {
        "." => format!("{words} (docs/api.md)."),
        field => format!("Field `{field}`: {words} (docs/api.md)."),
    }
}

/// The body of an endpoint that takes none: nothing, or a JSON object without fields (`{}`,
/// which some clients send by habit). Anything else is refused as [`StrictJson`] refuses it, so
/// `{"id": 7}` sent to `POST /api/v1/jobs/retry` (which retries every job) is a 422 naming `id`,
/// never a silent retry of everything.
pub struct NoBody;

/// No field at all: what [`NoBody`] reads a body as.
/// Not `deny_unknown_fields`: a field is then named by [`StrictJson`]'s own refusal.
#[derive(Deserialize)]
struct Nothing {}

impl<S: Send + Sync> FromRequest<S> for NoBody {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Response> {
        refuse_encoded(&request).map_err(IntoResponse::into_response)?;
        let content_type = request.headers().get(header::CONTENT_TYPE).cloned();
        // The body limit's and a stalled body's refusals, as for any other body.
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        if bytes.is_empty() {
            return Ok(Self);
        }
        // A body is JSON like every other: `{}` too needs its `Content-Type`, or gets 415.
        let mut request = Request::new(Body::from(bytes));
        if let Some(content_type) = content_type {
            request
                .headers_mut()
                .insert(header::CONTENT_TYPE, content_type);
        }
        StrictJson::<Nothing>::from_request(request, state).await?;
        Ok(Self)
    }
}

/// Any JSON, read like `serde_json::Value` except that an object with a key twice is refused.
/// `Value` keeps the last of the two, so `{"body": "a", "body": "b"}` was the reply "b", where a
/// proxy or a log that reads the first saw "a": what was checked would not be what was stored.
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON has no NaN or infinity, so every number read is finite.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key `{key}` is given twice"
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::Unique;

    fn read(json: &str) -> Result<serde_json::Value, String> {
        serde_json::from_str::<Unique>(json)
            .map(|Unique(v)| v)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_json_as_serde_json_does() {
        let text = r#"{"a": [1, -2, 2.5, "x", true, null, {"b": {}}], "c": 18446744073709551615}"#;
        assert_eq!(read(text), Ok(serde_json::from_str(text).expect("json")));
    }

    #[test]
    fn refuses_a_key_given_twice_at_any_depth() {
        for text in [
            r#"{"body": "a", "body": "b"}"#,
            r#"{"x": [{"k": 1, "k": 1}]}"#,
        ] {
            let err = read(text).expect_err(text);
            assert!(err.contains("given twice"), "{err}");
        }
        // The same key in two objects is two keys.
        assert!(read(r#"[{"k": 1}, {"k": 2}]"#).is_ok());
    }
}
