//! The child's restricted token and the one place it may write.
//!
//! The token is the host's own, passed through `CreateRestrictedToken` with
//! `WRITE_RESTRICTED | DISABLE_MAX_PRIVILEGE | LUA_TOKEN`, the dangerous
//! groups of [`plan::DANGEROUS_SIDS`] made deny-only, and one restricting SID
//! made for the connection ([`ConnectionSid`]): a write then succeeds only
//! where both the user and that SID are granted it, which is scratch and the
//! profile's read-write paths ([`grant_write`]), and the objects the child
//! creates itself (the token's default DACL names the SID).
// The raw Windows calls of this backend live here; each block says why it is sound.
#![allow(unsafe_code)]

use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle, RawHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{
    ERROR_SUCCESS, GENERIC_ALL, HANDLE, HLOCAL, LocalFree, WIN32_ERROR,
};
use windows_sys::Win32::Security::Authorization::{
    EXPLICIT_ACCESS_W, GRANT_ACCESS, GetNamedSecurityInfoW, NO_MULTIPLE_TRUSTEE, REVOKE_ACCESS,
    SE_FILE_OBJECT, SetEntriesInAclW, SetNamedSecurityInfoW, TRUSTEE_IS_SID, TRUSTEE_IS_UNKNOWN,
    TRUSTEE_W,
};
use windows_sys::Win32::Security::{
    ACL, CreateRestrictedToken, CreateWellKnownSid, DACL_SECURITY_INFORMATION,
    DISABLE_MAX_PRIVILEGE, GetTokenInformation, IsTokenRestricted, LUA_TOKEN, NO_INHERITANCE,
    PSECURITY_DESCRIPTOR, PSID, SID_AND_ATTRIBUTES, SUB_CONTAINERS_AND_OBJECTS_INHERIT,
    SetTokenInformation, TOKEN_ADJUST_DEFAULT, TOKEN_ASSIGN_PRIMARY, TOKEN_DEFAULT_DACL,
    TOKEN_DUPLICATE, TOKEN_QUERY, TOKEN_USER, TokenDefaultDacl, TokenUser, WELL_KNOWN_SID_TYPE,
    WRITE_RESTRICTED, WinBuiltinAdministratorsSid, WinBuiltinBackupOperatorsSid,
    WinBuiltinPowerUsersSid, WinLocalServiceSid, WinLocalSystemSid, WinNetworkServiceSid,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

use super::plan::{DangerousSid, TokenPlan};

/// A SID in a buffer of the largest SID's size (68 bytes), 4-byte aligned.
#[derive(Clone)]
pub struct Sid([u32; 17]);

impl Sid {
    fn psid(&self) -> PSID {
        self.0.as_ptr() as PSID
    }

    fn well_known(kind: WELL_KNOWN_SID_TYPE) -> io::Result<Sid> {
        let mut sid = Sid([0; 17]);
        let mut size = std::mem::size_of::<Sid>() as u32;
        let out: PSID = sid.0.as_mut_ptr().cast();
        // SAFETY: `out` points to `size` writable bytes; no domain SID is
        // needed for these built-in groups.
        let ok = unsafe { CreateWellKnownSid(kind, std::ptr::null_mut(), out, &mut size) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(sid)
    }
}

/// The restricting SID of one connection: `S-1-15-3-` and six random
/// sub-authorities (the capability form, which no account ever has), so
/// that one connection's grants never open another's scratch.
#[derive(Clone)]
pub struct ConnectionSid {
    sid: Sid,
    pub text: String,
}

impl ConnectionSid {
    pub fn random() -> ConnectionSid {
        let subs: [u32; 7] = std::array::from_fn(|i| if i == 0 { 3 } else { rand::random() });
        let mut words = [0u32; 17];
        // Revision 1, 7 sub-authorities, authority 15 (big-endian in bytes 2..8).
        words[0] = 1 | (subs.len() as u32) << 8;
        words[1] = 15 << 24;
        words[2..2 + subs.len()].copy_from_slice(&subs);
        let text = std::iter::once("S-1-15".to_string())
            .chain(subs.iter().map(u32::to_string))
            .collect::<Vec<_>>()
            .join("-");
        ConnectionSid {
            sid: Sid(words),
            text,
        }
    }
}

fn dangerous(kind: DangerousSid) -> WELL_KNOWN_SID_TYPE {
    match kind {
        DangerousSid::Administrators => WinBuiltinAdministratorsSid,
        DangerousSid::PowerUsers => WinBuiltinPowerUsersSid,
        DangerousSid::BackupOperators => WinBuiltinBackupOperatorsSid,
        DangerousSid::LocalSystem => WinLocalSystemSid,
        DangerousSid::NetworkService => WinNetworkServiceSid,
        DangerousSid::LocalService => WinLocalServiceSid,
    }
}

fn raw(h: &OwnedHandle) -> HANDLE {
    h.as_raw_handle() as HANDLE
}

fn win32(code: WIN32_ERROR) -> io::Result<()> {
    if code == ERROR_SUCCESS {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(code as i32))
    }
}

/// Memory the system allocated for us with `LocalAlloc`, freed on drop.
struct Local(HLOCAL);

impl Drop for Local {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the pointer came from a system call that documents
            // LocalFree as its release, and is freed once.
            unsafe { LocalFree(self.0) };
        }
    }
}

fn explicit(sid: PSID, mode: i32, access: u32, inherit: u32) -> EXPLICIT_ACCESS_W {
    EXPLICIT_ACCESS_W {
        grfAccessPermissions: access,
        grfAccessMode: mode,
        grfInheritance: inherit,
        Trustee: TRUSTEE_W {
            pMultipleTrustee: std::ptr::null_mut(),
            MultipleTrusteeOperation: NO_MULTIPLE_TRUSTEE,
            TrusteeForm: TRUSTEE_IS_SID,
            TrusteeType: TRUSTEE_IS_UNKNOWN,
            ptstrName: sid as *mut u16,
        },
    }
}

/// The host's token, opened for what making a restricted copy needs.
fn host_token() -> io::Result<OwnedHandle> {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the pseudo-handle of the current process needs no closing;
    // `token` is written on success and then owned.
    let ok = unsafe {
        OpenProcessToken(
            GetCurrentProcess(),
            TOKEN_DUPLICATE | TOKEN_QUERY | TOKEN_ASSIGN_PRIMARY | TOKEN_ADJUST_DEFAULT,
            &mut token,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh handle nothing else owns.
    Ok(unsafe { OwnedHandle::from_raw_handle(token as RawHandle) })
}

/// The user SID of `token`, copied out.
fn token_user(token: &OwnedHandle) -> io::Result<Sid> {
    let mut buf = [0u64; 16];
    let mut len = 0u32;
    // SAFETY: `buf` is writable for the size given; on success it holds a
    // TOKEN_USER whose SID points inside `buf`.
    let ok = unsafe {
        GetTokenInformation(
            raw(token),
            TokenUser,
            buf.as_mut_ptr().cast(),
            std::mem::size_of_val(&buf) as u32,
            &mut len,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so `buf` starts with a TOKEN_USER (aligned:
    // `buf` is u64s) whose SID lies within `buf`, at most 68 bytes long.
    let sid = unsafe {
        let user = &*(buf.as_ptr() as *const TOKEN_USER);
        let mut out = Sid([0; 17]);
        std::ptr::copy_nonoverlapping(
            user.User.Sid as *const u8,
            out.0.as_mut_ptr().cast(),
            68.min(len as usize),
        );
        out
    };
    Ok(sid)
}

/// The restricted primary token for the child, per `plan`, restricted by
/// `restricting`.
pub fn restricted_token(plan: &TokenPlan, restricting: &ConnectionSid) -> io::Result<OwnedHandle> {
    let host = host_token()?;
    let user = token_user(&host)?;
    // A SID this system does not know is skipped, not fatal.
    let disabled: Vec<Sid> = plan
        .disabled_sids
        .iter()
        .filter_map(|k| Sid::well_known(dangerous(*k)).ok())
        .collect();
    let disable: Vec<SID_AND_ATTRIBUTES> = disabled
        .iter()
        .map(|s| SID_AND_ATTRIBUTES {
            Sid: s.psid(),
            Attributes: 0,
        })
        .collect();
    let restrict = [SID_AND_ATTRIBUTES {
        Sid: restricting.sid.psid(),
        Attributes: 0,
    }];
    let mut flags = 0;
    if plan.disable_max_privilege {
        flags |= DISABLE_MAX_PRIVILEGE;
    }
    if plan.lua_token {
        flags |= LUA_TOKEN;
    }
    if plan.write_restricted {
        flags |= WRITE_RESTRICTED;
    }
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: the arrays and the SIDs they point to outlive the call, their
    // lengths are the counts given; `token` is written on success.
    let ok = unsafe {
        CreateRestrictedToken(
            raw(&host),
            flags,
            disable.len() as u32,
            disable.as_ptr(),
            0,
            std::ptr::null(),
            restrict.len() as u32,
            restrict.as_ptr(),
            &mut token,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh handle nothing else owns.
    let token = unsafe { OwnedHandle::from_raw_handle(token as RawHandle) };
    set_default_dacl(&token, &[&user, &restricting.sid])?;
    Ok(token)
}

/// Objects the child creates (its pipes, its own process and thread objects)
/// get a DACL naming the user and the restricting SID, so a write-restricted
/// child can still use them.
fn set_default_dacl(token: &OwnedHandle, sids: &[&Sid]) -> io::Result<()> {
    let entries: Vec<EXPLICIT_ACCESS_W> = sids
        .iter()
        .map(|s| explicit(s.psid(), GRANT_ACCESS, GENERIC_ALL, NO_INHERITANCE))
        .collect();
    let mut acl: *mut ACL = std::ptr::null_mut();
    // SAFETY: `entries` (and the SIDs they point to) outlive the call; the
    // new ACL is written to `acl` and freed by `Local`.
    win32(unsafe {
        SetEntriesInAclW(
            entries.len() as u32,
            entries.as_ptr(),
            std::ptr::null(),
            &mut acl,
        )
    })?;
    let _free = Local(acl.cast());
    let info = TOKEN_DEFAULT_DACL { DefaultDacl: acl };
    // SAFETY: `info` points to a valid ACL for the duration of the call.
    let ok = unsafe {
        SetTokenInformation(
            raw(token),
            TokenDefaultDacl,
            (&info as *const TOKEN_DEFAULT_DACL).cast(),
            std::mem::size_of::<TOKEN_DEFAULT_DACL>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether `token` is a restricted token (what the status reports).
pub fn is_restricted(token: &OwnedHandle) -> bool {
    // SAFETY: a valid token handle.
    unsafe { IsTokenRestricted(raw(token)) != 0 }
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// Adds (`grant`) or removes every ACE of `sid` on `path`'s DACL; a grant
/// gives full access inherited by everything beneath.
fn edit_dacl(path: &Path, sid: &Sid, grant: bool) -> io::Result<()> {
    let name = wide(path);
    let mut dacl: *mut ACL = std::ptr::null_mut();
    let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
    // SAFETY: `name` is NUL-terminated; `dacl` points into `sd`, which the
    // system allocated and `Local` frees after the last use of `dacl`.
    win32(unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut dacl,
            std::ptr::null_mut(),
            &mut sd,
        )
    })?;
    let _sd = Local(sd);
    let entry = if grant {
        explicit(
            sid.psid(),
            GRANT_ACCESS,
            GENERIC_ALL,
            SUB_CONTAINERS_AND_OBJECTS_INHERIT,
        )
    } else {
        explicit(sid.psid(), REVOKE_ACCESS, 0, NO_INHERITANCE)
    };
    let mut new: *mut ACL = std::ptr::null_mut();
    // SAFETY: `entry` and its SID outlive the call; `dacl` is valid (or
    // null); the new ACL is freed by `Local`.
    win32(unsafe { SetEntriesInAclW(1, &entry, dacl, &mut new) })?;
    let _new = Local(new.cast());
    // SAFETY: `name` is NUL-terminated and `new` a valid ACL.
    win32(unsafe {
        SetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            DACL_SECURITY_INFORMATION,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            new,
            std::ptr::null(),
        )
    })
}

/// Lets the connection's SID write `path` and everything beneath it.
pub fn grant_write(path: &Path, sid: &ConnectionSid) -> io::Result<()> {
    edit_dacl(path, &sid.sid, true)
}

/// Takes back what [`grant_write`] gave (the profile's read-write paths
/// outlive the connection; scratch is removed whole).
pub fn revoke_write(path: &Path, sid: &ConnectionSid) -> io::Result<()> {
    edit_dacl(path, &sid.sid, false)
}

/// Whether the running `process` holds a restricted token (read back from
/// the child, not assumed from what was asked).
pub fn process_is_restricted(process: &OwnedHandle) -> bool {
    let mut token: HANDLE = std::ptr::null_mut();
    // SAFETY: a valid process handle; `token` is written on success and then owned.
    if unsafe { OpenProcessToken(raw(process), TOKEN_QUERY, &mut token) } == 0 {
        return false;
    }
    // SAFETY: a fresh handle nothing else owns.
    let token = unsafe { OwnedHandle::from_raw_handle(token as RawHandle) };
    is_restricted(&token)
}
