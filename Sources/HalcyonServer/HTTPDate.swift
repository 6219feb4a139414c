import Foundation

/// HTTP dates (RFC 9110, section 5.6.7), in Unix seconds: written as IMF-fixdate, read in any of the three forms
/// a recipient must accept. By hand, without `DateFormatter` (no ICU, no locale), as they are read per request.
enum HTTPDate {
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let longWeekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    /// The latest time written: the end of year 9999.
    static let latest = 253_402_300_799

    /// `date` in whole seconds, rounded down and clamped to 1970...9999 (0 when not finite, as a damaged stored
    /// entry may carry).
    static func seconds(of date: Date) -> Int {
        let interval = date.timeIntervalSince1970
        guard interval.isFinite else { return 0 }
        return Int(min(max(interval, 0), Double(latest)).rounded(.down))
    }

    /// `seconds` as IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), clamped to 1970...9999.
    static func format(_ seconds: Int) -> String {
        let seconds = min(max(seconds, 0), latest)
        let days = seconds / 86_400, time = seconds % 86_400
        let (year, month, day) = civil(fromDays: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(weekdays[(days + 4) % 7]), \(two(day)) \(months[month - 1]) \(year) "
            + "\(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }

    /// The Unix time of an HTTP date in IMF-fixdate, the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`)
    /// or C's asctime form (`Sun Nov  6 08:49:37 1994`); nil for anything else, or a date that does not exist.
    /// An RFC 850 two-digit year is the latest year with those digits not more than 50 years ahead of `now`.
    static func parse(_ text: String, now: Date = Date()) -> Int? {
        // The longest form is 38 bytes (RFC 850 on a Wednesday); a longer value is not split.
        guard text.utf8.count <= 64 else { return nil }
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        switch parts.count {
        case 6 where parts[5] == "GMT" && weekdays.contains(String(parts[0].dropLast())) && parts[0].last == ",":
            return seconds(year: parts[3], yearDigits: 4, month: parts[2], day: parts[1], time: parts[4], now: now)
        case 4 where parts[3] == "GMT" && longWeekdays.contains(String(parts[0].dropLast())) && parts[0].last == ",":
            let date = parts[1].split(separator: "-", omittingEmptySubsequences: false)
            guard date.count == 3 else { return nil }
            return seconds(year: date[2], yearDigits: 2, month: date[1], day: date[0], time: parts[2], now: now)
        case 5 where weekdays.contains(String(parts[0])):
            return seconds(year: parts[4], yearDigits: 4, month: parts[1], day: parts[2], time: parts[3], now: now)
        default:
            return nil
        }
    }

    // MARK: - Parts

    private static func seconds(
        year yearText: Substring, yearDigits: Int, month monthText: Substring, day dayText: Substring,
        time timeText: Substring, now: Date
    ) -> Int? {
        let clock = timeText.split(separator: ":", omittingEmptySubsequences: false)
        guard yearText.count == yearDigits, (1...2).contains(dayText.count), clock.count == 3,
              clock.allSatisfy({ $0.count == 2 }),
              var year = number(yearText), let month = months.firstIndex(of: String(monthText)).map({ $0 + 1 }),
              let day = number(dayText), let hour = number(clock[0]), let minute = number(clock[1]),
              let second = number(clock[2]), hour < 24, minute < 60, second <= 60 else { return nil }
        if yearDigits == 2 {
            let latest = civil(fromDays: seconds(of: now) / 86_400).year + 50
            year = latest - (latest - year) % 100
        }
        guard year >= 1, day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        // A leap second (60) is read as the last second of its minute.
        return days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
    }

    /// The value of one to nine ASCII decimal digits; nil for anything else.
    private static func number(_ text: Substring) -> Int? {
        guard (1...9).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return text.utf8.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (negative before it).
    private static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (not before it).
    private static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let month = shifted + (shifted < 10 ? 3 : -9)
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, dayOfYear - (153 * shifted + 2) / 5 + 1)
    }
}
