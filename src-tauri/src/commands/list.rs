// The desktop's commands: the one list that everything else reads.
//
// Each entry is `screen::command(Args) -> Result`, where `screen` is the file
// under `commands/`, `Args` the command's argument struct in that file and
// `Result` what it answers (without `IpcResult`); a streaming command also
// names its channel, `Channel<Message>`. This file is `include!`d where
// `commands!` means something different each time:
// - `src-tauri/build.rs`: the names, for tauri-build's `allow-<command>`
//   permissions;
// - `lib.rs`: `tauri::generate_handler![...]`, the registration;
// - `ipc_types.rs`: the TypeScript `Commands` map the page's `call` is typed
//   against, plus a compile-time check that each function takes `Args` and
//   answers `Result`.
// `capabilities/default.json` grants each `allow-<command>`; a test in
// `lib.rs` keeps it equal to this list.
commands! {
    // Window frame and site.
    app::app_info(AppInfoArgs) -> AppInfo,
    app::last_screen(LastScreenArgs) -> Option<String>,
    app::remember_screen(RememberScreenArgs) -> (),
    site::open_site(OpenSiteArgs) -> SiteSummary,
    site::create_site(CreateSiteArgs) -> SiteSummary,
    site::pick_folder(PickFolderArgs) -> Option<String>,
    site::recent_sites(RecentSitesArgs) -> Vec<RecentSite>,
    site::forget_site(ForgetSiteArgs) -> Vec<RecentSite>,
    site::default_site_path(DefaultSitePathArgs) -> String,
    // Keys.
    keys::key_overview(KeyOverviewArgs) -> Vec<KeyReport>,
    keys::list_keys(ListKeysArgs) -> Vec<KeyInfo>,
    keys::mint_key(MintKeyArgs) -> MintedKey,
    keys::revoke_key(RevokeKeyArgs) -> KeyInfo,
    keys::roll_key(RollKeyArgs) -> MintedKey,
    keys::restrict_key(RestrictKeyArgs) -> KeyInfo,
    keys::key_tools(KeyToolsArgs) -> Vec<ToolChoice>,
    // OAuth grants, beside the keys.
    grants::oauth_grants(OAuthGrantsArgs) -> Vec<GrantOverview>,
    grants::revoke_oauth_grant(RevokeOAuthGrantArgs) -> (),
    grants::pairing_request(PairingRequestArgs) -> PairingRequest,
    grants::approve_pairing(ApprovePairingArgs) -> PairingApproved,
    // Users, site config and audit.
    users::list_users(ListUsersArgs) -> Vec<User>,
    users::create_user(CreateUserArgs) -> User,
    users::set_user_roles(SetUserRolesArgs) -> User,
    users::set_user_disabled(SetUserDisabledArgs) -> User,
    users::permission_table(PermissionTableArgs) -> Vec<PermissionRow>,
    site_config::list_site_config(ListSiteConfigArgs) -> Vec<ConfigEntry>,
    site_config::set_site_config(SetSiteConfigArgs) -> ConfigEntry,
    site_config::unset_site_config(UnsetSiteConfigArgs) -> (),
    audit::audit_page(AuditPageArgs) -> AuditPage,
    audit::verify_audit(VerifyAuditArgs) -> AuditReport,
    audit::export_audit(ExportAuditArgs) -> AuditExport,
    // Client config.
    client_config::config_clients(ConfigClientsArgs) -> Vec<ClientChoice>,
    client_config::generate_client_config(GenerateClientConfigArgs) -> GeneratedConfig,
    client_config::install_client_config(InstallClientConfigArgs) -> InstallOutcome,
    client_config::doctor_client_configs(DoctorClientConfigsArgs) -> DoctorReport,
    // Connections: live state, stderr, editing, consent, tools and calls.
    connections::list_connections(ListConnectionsArgs) -> Vec<ConnectionView>,
    connections::open_connection(OpenConnectionArgs) -> LiveView,
    connections::close_connection(CloseConnectionArgs) -> LiveView,
    connections::watch_stderr(WatchStderrArgs, Channel<TailMessage>) -> bool,
    connections::unwatch_stderr(UnwatchStderrArgs) -> bool,
    connections::connection_status(ConnectionStatusArgs) -> LiveView,
    connection_edit::connection_form(ConnectionFormArgs) -> DefinitionForm,
    connection_edit::save_connection(SaveConnectionArgs) -> String,
    connection_edit::duplicate_connection(DuplicateConnectionArgs) -> String,
    connection_edit::remove_connection(RemoveConnectionArgs) -> (),
    connection_edit::consent_request(ConsentRequestArgs) -> ConsentRequest,
    connection_edit::grant_consent(GrantConsentArgs) -> (),
    connection_edit::approve_tools(ApproveToolsArgs) -> (),
    connection_calls::list_tools(ListToolsArgs) -> Vec<ToolView>,
    connection_calls::tool_hold(ToolHoldArgs) -> Option<ErrorBody>,
    connection_calls::call_tool(CallToolArgs) -> CallView,
    connection_calls::cancel_call(CancelCallArgs) -> bool,
    connection_calls::call_records(CallRecordsArgs) -> CallRecordPage,
    connection_calls::save_call_result(SaveCallResultArgs) -> String,
    connection_calls::save_stderr(SaveStderrArgs) -> String,
    // Actor preview.
    actor_preview::preview_choices(PreviewChoicesArgs) -> PreviewChoices,
    actor_preview::preview_actors(PreviewActorsArgs) -> ActorComparison,
    // Approvals: the owner's queue of held calls.
    approvals::held_calls(HeldCallsArgs) -> Vec<HeldCall>,
    approvals::decide_held_call(DecideHeldCallArgs) -> HeldCall,
    approvals::notify_held_calls(NotifyHeldCallsArgs) -> Option<HeldNotice>,
    // Serve panel: the supervised `gatehouse serve`.
    serve::start_serve(StartServeArgs) -> ServeStatus,
    serve::serve_status(ServeStatusArgs) -> Option<ServeStatus>,
    serve::stop_serve(StopServeArgs) -> ServeStatus,
    serve::serve_client_configs(ServeClientConfigsArgs) -> Vec<RemoteConfig>,
    serve::serve_saved_settings(ServeSavedSettingsArgs) -> ServeSettings,
    serve::save_serve_settings(SaveServeSettingsArgs) -> ServeSettings,
}
