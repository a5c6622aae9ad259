-- ISO weeks ('YYYY-Www', UTC) that have node availability data, newest first.
-- days: UTC days of the week with data (7 = a full week; the app defaults to the
-- newest full week).
SELECT
    isoyear(day) || '-W' || lpad(CAST(week(day) AS VARCHAR), 2, '0') AS week,
    count(DISTINCT day) AS days
FROM fleet_availability_daily
GROUP BY week
ORDER BY week DESC
