//! SQLite storage: the only place with SQL. One writer thread owns the only write connection and
//! commits queued writes in groups; a small reader pool serves reads off the async threads.
//! Storage functions are plain synchronous functions over `&rusqlite::Connection`.

mod account_links;
mod api_tokens;
mod attachments;
mod audit;
mod canned;
mod capacity;
mod check;
mod checkpoint;
mod conversations;
mod damage;
mod db;
mod deliveries;
mod delivery;
mod disk_room;
mod dismissed;
mod error;
mod export;
mod foreign;
mod hours;
mod identity;
mod ids;
mod imap_mailbox;
mod inbox;
mod inbox_list;
mod integrations;
mod integrity;
mod job_backlog;
mod jobs;
mod live_inbox;
mod lock;
mod mail;
mod mail_inbound;
mod mail_outbound;
mod messages;
mod migrate;
mod oidc_links;
mod prechat;
mod purge;
mod readers;
mod receipts;
mod requeue;
mod search;
mod sequences;
mod sessions;
mod settings;
mod sites;
mod slack;
mod slack_shares;
mod snooze;
mod tags;
mod test_messages;
mod two_factor;
mod users;
mod visitors;
mod write_failures;
mod writer;

pub use api_tokens::{
    ApiTokenRow, ApiTokenUse, NewApiToken, delete_api_token, delete_api_tokens_of, find_api_token,
    find_api_token_use, insert_api_token, list_api_tokens, list_api_tokens_of, touch_api_token,
};
pub use attachments::{
    AttachmentMeta, AttachmentPart, NewAttachment, StoredAttachment, Uploader, are_free_uploads,
    delete_unattached_attachments, delete_visitor_uploads, find_attachment, find_attachment_limit,
    insert_attachment, insert_attachment_chunk, insert_attachment_thumbnail, list_visitor_files,
    message_files, read_attachment_data, read_attachment_part, set_attachment_limit,
};
pub use audit::{
    AuditEventRow, AuditFilter, NewAuditEvent, find_token_owner, find_token_revocation,
    insert_audit_event, list_audit_events, prune_audit_events, upsert_audit_event_per_minute,
};
pub use canned::{
    CannedReplyFields, CannedReplyRow, delete_canned_reply, find_canned_reply, insert_canned_reply,
    list_canned_replies, update_canned_reply,
};
pub use capacity::{
    LoadtestRunRow, NewLoadtestRun, find_busiest_minute, find_loadtest_run, insert_loadtest_run,
    insert_metrics_minute, list_loadtest_runs_with_reports, list_metrics_spans,
    prune_metrics_minutes,
};
pub use check::{CheckReport, check_database, has_no_tables, is_porch_database};
pub use checkpoint::{truncate_after_deleting, truncate_wal_after_deleting};
pub use conversations::{
    ConversationFilter, ConversationRow, find_conversation, find_open_conversation_of,
    list_conversations,
};
pub use damage::{DamagedFile, explain_damage};
pub use db::{
    Synchronous, copy_database_into, open_existing_read_only, open_read_connection,
    open_write_connection, truncate_wal, write_transaction,
};
pub use deliveries::{
    DeliveryLogRow, WebhookConversation, delete_integration, disable_integration,
    find_discord_thread, find_newest_delivery_attempt, find_newest_failed_delivery,
    find_retrying_delivery, find_user_contact, forget_discord_threads, insert_discord_thread,
    list_delivery_log, list_site_integrations, load_webhook_conversation,
};
pub use delivery::{DeliveryMessage, add_file_lines, load_delivery_message};
pub use disk_room::{
    UPLOAD_RESERVE_BYTES, explain_a_file_error, explain_full_disk, upload_leaves_room,
};
pub use dismissed::{dismiss_failed_job, dismiss_failed_jobs_page, newest_failed_job};
pub use error::Error;
pub use export::{
    ConversationRecord, JobRecord, VisitorRecord, find_visitor_record,
    find_visitor_record_by_token_hash, find_visitors_by_email, list_conversations_after,
    list_visitor_conversation_ids, list_visitor_conversations, list_visitor_jobs,
};
pub use foreign::{in_context, open_porch_database, refuse_misplaced_files, refuse_other_database};
pub use hours::{SiteHoursRow, delete_site_hours, find_site_hours, upsert_site_hours};
pub use identity::{
    VisitorIdentityRow, delete_site_identity_secret, find_site_identity_secret,
    find_visitor_identity, list_site_identity_secrets, upsert_site_identity_secret,
};
pub use ids::{ConversationId, IntegrationId, JobId, MessageId, SiteId, TagId, UserId, VisitorId};
pub use imap_mailbox::{
    ImapMailboxRow, delete_imap_mailbox, find_imap_mailbox, upsert_imap_mailbox,
};
pub use integrations::{
    ActiveIntegration, IntegrationRow, NewIntegration, RESUMING, find_integration,
    find_integration_site, find_site_integration, find_slack_in_channel, find_webhook_with_url,
    has_active_email, insert_integration, is_integration_resuming, list_active_integrations,
    list_all_integrations, list_enabled_integrations, list_integration_secrets,
    list_resuming_integrations, list_webhook_endpoints, mark_integration_broken,
    mark_integration_healthy, start_resuming_email, start_resuming_integration,
    update_integration_config, update_integration_secrets,
};
pub use integrity::{
    INTEGRITY_CHECK_INTERVAL, IntegrityStatus, quick_check, spawn_integrity_checks,
};
pub use job_backlog::{
    count_queued_jobs, forget_jobs_from_elsewhere, highest_job_id, list_jobs_from_elsewhere,
    list_queued_jobs_after, list_queued_jobs_by_id, list_queued_jobs_of_rate_key,
    list_queued_rate_keys, note_jobs_from_elsewhere,
};
pub use jobs::{
    AttemptRecord, JobInContext, JobRow, JobUpdate, MessageDelivery, NewJob,
    block_integration_jobs, count_deliveries_in_state, count_jobs_by_state, find_job, insert_job,
    list_conversation_deliveries, list_deliveries_in_state_with_context, list_jobs_in_state,
    mark_jobs_running, prune_done_jobs, record_attempts, requeue_running_jobs,
};
pub use lock::{InstanceLock, LOCK_FILE, LockError, not_readable, not_writable};
pub use mail::{
    UnansweredRow, find_site_name, has_visitor_email, insert_email_alerts, list_agent_emails,
    list_unanswered, set_visitor_email,
};
pub use mail_inbound::{
    InboundMailRow, MailOutcome, MailThreadRow, delete_inbound_mail_before, ensure_mail_thread,
    find_mail_thread, has_inbound_mail, insert_inbound_mail, list_inbound_mail,
};
pub use mail_outbound::{find_outbound_mail_subject, insert_outbound_mail, list_outbound_mails};
pub use messages::{
    MessageRow, NewAgentMessage, NewVisitorMessage, StoredAgentMessage, StoredVisitorMessage,
    find_agent_message_by_client_id, find_newest_message_id, has_visitor_message,
    insert_agent_message, insert_visitor_message, list_conversation_messages,
    list_conversation_messages_after, list_visitor_messages_after,
};
#[cfg(test)]
pub use migrate::migrated_in_memory;
pub use migrate::{
    LATEST as LATEST_SCHEMA, apply_migrations, apply_migrations_while, refuse_newer_schema,
    schema_version,
};
pub use prechat::{
    SitePrechatRow, delete_site_prechat, field_mode, find_site_prechat, upsert_site_prechat,
};
pub use purge::{
    Deleted, erase_visitor_chunk, list_retention_sites, purge_due_conversations,
    reclaim_free_pages, vacuum_into_incremental_mode,
};
pub use readers::Readers;
pub use receipts::{
    VisitorReceipts, find_agents_read_up_to, find_conversation_newest_message,
    find_seen_visitor_message, find_visitor_receipts,
};
pub use requeue::{
    Requeued, Retryable, find_retryable_job, has_blocked_jobs_of_integration,
    integration_takes_deliveries, list_retryable_jobs, requeue_blocked_jobs_of_integration,
    requeue_job,
};
pub use search::{
    IndexStep, MARK_END, MARK_START, MESSAGE_WINDOW, MessageHitRow, MessageHits, SearchFilter,
    VisitorHitRow, count_unindexed, find_visitor_hits, index_messages, search_messages,
    search_visitors, search_watermark,
};
pub use sequences::{RaisedCounter, id_counters, raise_id_counters};
pub use settings::load_or_create_secret;
pub use sites::{NewSite, SiteRow, find_site_by_key, insert_site, list_sites};
pub use slack::{
    ThreadStart, begin_slack_thread, find_conversation_by_slack_thread, find_slack_thread,
    forget_slack_thread_start, insert_slack_event, insert_slack_thread, insert_slack_thread_root,
    park_slack_app, prune_slack_events,
};
pub use slack_shares::{
    MessageFile, SLACK_TEXT_PART, insert_slack_share, list_message_files, list_slack_shares,
};
pub use test_messages::{forget_earlier_tests, latest_test_job};
pub use two_factor::{
    StoredTotp, TotpRow, confirm_totp, count_unused_recovery_codes,
    delete_sessions_without_two_factor, delete_two_factor, find_two_factor_required,
    list_totp_secrets, list_two_factor_users, load_totp_secret, replace_recovery_codes,
    save_totp_secret, update_totp_secret, update_two_factor_required, use_recovery_code,
    use_totp_step,
};
pub use users::{
    NewUser, UserRow, find_user_by_email, insert_user, spend_invitations, spend_user_links,
};
pub use visitors::{
    Contact, VisitorDetails, VisitorRow, find_visitor_by_token_hash, set_visitor_contact,
};
pub use writer::{DEFER_LIMIT, Writer, WriterStats};
// The admin inbox and accounts.
pub use account_links::{
    AccountLinkRow, find_account_link, insert_account_link, is_account_link_usable,
    use_account_link,
};
pub use inbox::{
    Expected, InboxItemRow, OpenConversationRead, OtherConversationRow, VisitorDetailsRow,
    close_conversation, find_conversation_to_answer_instead_of, find_inbox_item,
    find_last_message_id, find_visitor_details, insert_system_message,
    list_conversations_changed_after, list_open_conversation_reads,
    list_open_conversations_assigned_to, list_other_conversations_of_visitor,
    mark_conversation_unread, reopen_conversation, unassign_open_conversation_of,
    update_conversation_assignee, upsert_conversation_read,
};
pub use inbox_list::{
    INBOX_COUNT_CAP, InboxAssignee, InboxCursor, InboxPage, InboxQuery, InboxSort, InboxState,
    InboxStatus, count_inbox, list_inbox_page,
};
pub use live_inbox::{AgentRead, LiveInboxRow, find_live_inbox_row};
pub use oidc_links::{OidcLinkRow, find_oidc_link, find_oidc_subject_user, insert_oidc_link};
pub use sessions::{
    NewSession, SessionRow, delete_expired_sessions, delete_session, delete_user_sessions,
    find_session, insert_session,
};
pub use sites::{count_site_conversations, delete_site, update_site};
pub use snooze::{
    Resnooze, end_snooze, list_snoozes_ended, next_snooze_end, snooze_conversation,
    unsnooze_conversation,
};
pub use tags::{
    NO_SUCH_TAG, TagRow, TagsChanged, change_conversation_tags, delete_tags_if_unused,
    delete_unused_tags, find_tag, list_conversation_tags, list_tags,
};
pub use users::{
    NotJoined, UserCredentials, count_other_admins, count_users, find_password_hash, find_user,
    find_user_credentials, has_password, list_users, list_users_not_joined, update_password_hash,
    update_user_disabled, update_user_name, update_user_role,
};
