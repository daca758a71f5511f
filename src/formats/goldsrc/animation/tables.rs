//! Names GoldSrc turns into numbers: motion types (`goldsrc.md` §5) and activities (§6.4).

/// Motion type flags in `studio.h` order: X Y Z XR YR ZR LX LY LZ AX AY AZ AXR AYR AZR.
const MOTION: [&str; 15] = [
    "X", "Y", "Z", "XR", "YR", "ZR", "LX", "LY", "LZ", "AX", "AY", "AZ", "AXR", "AYR", "AZR",
];

pub const STUDIO_XR: i32 = 0x8;
pub const STUDIO_YR: i32 = 0x10;
pub const STUDIO_ZR: i32 = 0x20;
pub const STUDIO_LX: i32 = 0x40;
pub const STUDIO_LY: i32 = 0x80;
pub const STUDIO_LZ: i32 = 0x100;

/// `lookupControl`: the flag of a motion type word (any case), or `None`.
pub fn motion_flag(word: &str) -> Option<i32> {
    MOTION
        .iter()
        .position(|m| m.eq_ignore_ascii_case(word))
        .map(|i| 1 << i)
}

/// The channel (0..6: X, Y, Z, XR, YR, ZR) a controller type drives, or `None`.
pub fn controller_channel(word: &str) -> Option<usize> {
    MOTION
        .iter()
        .take(6)
        .position(|m| m.eq_ignore_ascii_case(word))
}

/// `dlls/activity.h`, ACT_IDLE = 1 … ACT_FLINCH_RIGHTLEG = 76.
const ACTIVITIES: [&str; 76] = [
    "ACT_IDLE",
    "ACT_GUARD",
    "ACT_WALK",
    "ACT_RUN",
    "ACT_FLY",
    "ACT_SWIM",
    "ACT_HOP",
    "ACT_LEAP",
    "ACT_FALL",
    "ACT_LAND",
    "ACT_STRAFE_LEFT",
    "ACT_STRAFE_RIGHT",
    "ACT_ROLL_LEFT",
    "ACT_ROLL_RIGHT",
    "ACT_TURN_LEFT",
    "ACT_TURN_RIGHT",
    "ACT_CROUCH",
    "ACT_CROUCHIDLE",
    "ACT_STAND",
    "ACT_USE",
    "ACT_SIGNAL1",
    "ACT_SIGNAL2",
    "ACT_SIGNAL3",
    "ACT_TWITCH",
    "ACT_COWER",
    "ACT_SMALL_FLINCH",
    "ACT_BIG_FLINCH",
    "ACT_RANGE_ATTACK1",
    "ACT_RANGE_ATTACK2",
    "ACT_MELEE_ATTACK1",
    "ACT_MELEE_ATTACK2",
    "ACT_RELOAD",
    "ACT_ARM",
    "ACT_DISARM",
    "ACT_EAT",
    "ACT_DIESIMPLE",
    "ACT_DIEBACKWARD",
    "ACT_DIEFORWARD",
    "ACT_DIEVIOLENT",
    "ACT_BARNACLE_HIT",
    "ACT_BARNACLE_PULL",
    "ACT_BARNACLE_CHOMP",
    "ACT_BARNACLE_CHEW",
    "ACT_SLEEP",
    "ACT_INSPECT_FLOOR",
    "ACT_INSPECT_WALL",
    "ACT_IDLE_ANGRY",
    "ACT_WALK_HURT",
    "ACT_RUN_HURT",
    "ACT_HOVER",
    "ACT_GLIDE",
    "ACT_FLY_LEFT",
    "ACT_FLY_RIGHT",
    "ACT_DETECT_SCENT",
    "ACT_SNIFF",
    "ACT_BITE",
    "ACT_THREAT_DISPLAY",
    "ACT_FEAR_DISPLAY",
    "ACT_EXCITED",
    "ACT_SPECIAL_ATTACK1",
    "ACT_SPECIAL_ATTACK2",
    "ACT_COMBAT_IDLE",
    "ACT_WALK_SCARED",
    "ACT_RUN_SCARED",
    "ACT_VICTORY_DANCE",
    "ACT_DIE_HEADSHOT",
    "ACT_DIE_CHESTSHOT",
    "ACT_DIE_GUTSHOT",
    "ACT_DIE_BACKSHOT",
    "ACT_FLINCH_HEAD",
    "ACT_FLINCH_CHEST",
    "ACT_FLINCH_STOMACH",
    "ACT_FLINCH_LEFTARM",
    "ACT_FLINCH_RIGHTARM",
    "ACT_FLINCH_LEFTLEG",
    "ACT_FLINCH_RIGHTLEG",
];

/// `lookupActivity`: the number of an activity name (any case) or of `ACT_<digits>` (C `atoi`
/// of what follows `ACT_`); 0 when it is neither.
pub fn activity_number(name: &str) -> i32 {
    if let Some(i) = ACTIVITIES.iter().position(|a| a.eq_ignore_ascii_case(name)) {
        return i as i32 + 1;
    }
    match name.get(..4) {
        Some(p) if p.eq_ignore_ascii_case("ACT_") => atoi(name.get(4..).unwrap_or("")).unwrap_or(0),
        _ => 0,
    }
}

/// C `atoi`: leading blanks, an optional sign, digits (wrapping like a 32-bit int); `None` when
/// there is no digit at all.
pub fn atoi(s: &str) -> Option<i32> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, t.get(1..).unwrap_or("")),
        Some(b'+') => (false, t.get(1..).unwrap_or("")),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    let mut any = false;
    for b in digits.bytes() {
        if !b.is_ascii_digit() {
            break;
        }
        any = true;
        v = (v * 10 + i64::from(b - b'0')) & 0xffff_ffff;
    }
    if !any {
        return None;
    }
    let v = v as u32 as i32;
    Some(if neg { v.wrapping_neg() } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn activities() {
        assert_eq!(activity_number("ACT_IDLE"), 1);
        assert_eq!(activity_number("act_walk"), 3);
        assert_eq!(activity_number("ACT_FLINCH_RIGHTLEG"), 76);
        assert_eq!(activity_number("ACT_123"), 123);
        assert_eq!(activity_number("ACT_RESET"), 0);
        assert_eq!(activity_number("idle"), 0);
    }

    #[test]
    fn motion_flags() {
        assert_eq!(motion_flag("lx"), Some(0x40));
        assert_eq!(motion_flag("AZR"), Some(0x4000));
        assert_eq!(motion_flag("LM"), None);
        assert_eq!(controller_channel("yr"), Some(4));
        assert_eq!(controller_channel("LX"), None);
    }

    #[test]
    fn c_atoi() {
        assert_eq!(atoi("1004"), Some(1004));
        assert_eq!(atoi(" -12abc"), Some(-12));
        assert_eq!(atoi("AE_X"), None);
    }
}
